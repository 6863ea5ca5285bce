"""The access app's config: the models of ``annotation.access`` (memberships, the access
log) with migrations of their own."""

from django.apps import AppConfig


class AccessConfig(AppConfig):
    name = "annotation.access"
    label = "access"
    verbose_name = "Access"
