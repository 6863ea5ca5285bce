from django.apps import AppConfig


class CoreConfig(AppConfig):
    """The bottom layer as an app only for its one table, the outbox (``core.models``)."""

    name = "core"
    verbose_name = "Core"
    default_auto_field = "django.db.models.BigAutoField"
