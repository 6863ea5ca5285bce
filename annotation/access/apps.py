"""The access app's config: the models of ``annotation.access`` (memberships, the access
log) with migrations of their own; once the admin has found every admin module, each
admin is made to answer 404 for an object the viewer may not see (``admin.close_oracles``)."""

from django.apps import AppConfig


class AccessConfig(AppConfig):
    name = "annotation.access"
    label = "access"
    verbose_name = "Access"

    def ready(self) -> None:
        # After the admin's own ready (autodiscover: INSTALLED_APPS lists it first):
        # every registered admin answers 404 for an object the viewer may not see.
        from django.contrib import admin

        from annotation.access.admin import close_oracles

        close_oracles(admin.site)
