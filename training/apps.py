from django.apps import AppConfig


class TrainingConfig(AppConfig):
    name = "training"
    verbose_name = "Training"

    def ready(self) -> None:
        from django.db.models.signals import post_save

        from annotation.models import Study
        from annotation.participants.erasure import annotator_erased
        from annotation.participants.services import ranking_stored

        annotator_erased.connect(
            _forget_in_snapshots, dispatch_uid="training.snapshots.erasure.forget_annotator"
        )
        ranking_stored.connect(_every_n_rankings, dispatch_uid="training.registry.sampling.every")
        post_save.connect(
            _study_saved, sender=Study, dispatch_uid="training.registry.sampling.study"
        )


def _forget_in_snapshots(
    sender, pseudonym: str, annotator: int, demographics: dict | None = None, **kwargs
) -> None:
    """An erased annotator leaves what training stored: the pseudonym every snapshot's
    lineage, labels that pooled fewer than k annotators the snapshots, and the perspective
    reports that read their rankings go (``training.snapshots.erasure``)."""
    from training.snapshots.erasure import forget_annotator

    forget_annotator(pseudonym, annotator, demographics)


def _every_n_rankings(sender, ranking_id: int, study_id: int, **kwargs) -> None:
    """Every ``SAMPLER["EVERY"]``-th ranking (by id: no query on the submit path) queues
    the study's priorities after commit; the task does nothing for a ``uniform`` study."""
    from django.conf import settings

    from core.queue import after_commit
    from training.registry.sampling import TASK

    every = settings.STEREORANK["SAMPLER"]["EVERY"]
    if every and ranking_id % every == 0:
        after_commit(TASK, study_id)


def _study_saved(sender, instance, **kwargs) -> None:
    """A study saved with the ``active`` sampler (switched in the admin or the staff API)
    gets its priorities once the save commits."""
    from core.queue import after_commit
    from training.registry.sampling import TASK

    if instance.sampler == instance.Sampler.ACTIVE:
        after_commit(TASK, instance.pk)
