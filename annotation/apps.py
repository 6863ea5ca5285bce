from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"

    def ready(self) -> None:
        from annotation.quality import checks  # noqa: F401  (registers the system checks
        from annotation.rankings import checks as _exports  # noqa: F401  (deploy checks)
