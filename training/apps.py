from django.apps import AppConfig


class TrainingConfig(AppConfig):
    name = "training"
    verbose_name = "Training"

    def ready(self) -> None:
        from annotation.erasure import annotator_erased

        annotator_erased.connect(_forget_in_snapshots, dispatch_uid="training.snapshots.forget")


def _forget_in_snapshots(sender, pseudonym: str, **kwargs) -> None:
    """An erased annotator's pseudonym leaves every snapshot's lineage."""
    from training.snapshots import forget

    forget(pseudonym)
