"""The crowd app's config: the ledger's models (``annotation.crowd.models``) with
migrations of their own, so the platform's records stay apart from the annotation tables."""

from django.apps import AppConfig


class CrowdConfig(AppConfig):
    name = "annotation.crowd"
    label = "crowd"
    verbose_name = "Crowd platform"
