from django.apps import AppConfig


class ScoringConfig(AppConfig):
    name = "scoring"
    verbose_name = "Scoring"

    def ready(self) -> None:
        from annotation.validation.conditions import validation_study_requested

        from . import checks  # noqa: F401  (registers the system checks)

        validation_study_requested.connect(
            _validation_conditions, dispatch_uid="scoring.validation.from_active_version"
        )


def _validation_conditions(sender, study, placeholder_images: int, **kwargs) -> dict:
    """A new validation study's conditions from the active version's optimiser."""
    from scoring.validation import from_active_version

    return from_active_version(study, placeholder_images=placeholder_images)
