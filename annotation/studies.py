"""Studies: the unit a lab runs (``study_models.Study``), found by slug or defaulted.

Everything a study owns (items, tasks, consent and instruction versions, quotas,
participants) names it; a command or service given no study works on the default
one (slug ``default``), so a lab that never creates a second study never names one.
"""

from django.conf import settings

from .errors import StudyNotFound
from .study_models import DEFAULT_STUDY_SLUG, Study, default_study_pk


def default_study() -> Study:
    """The default study, made when missing (``study_models.default_study_pk``)."""
    return Study.objects.get(pk=default_study_pk())


def resolve(slug: str | None) -> Study:
    """The study with this slug (the default one for None); ``StudyNotFound`` otherwise."""
    if slug is None or slug == DEFAULT_STUDY_SLUG:
        return default_study()
    found = Study.objects.filter(slug=slug).first()
    if found is None:
        raise StudyNotFound(f"There is no study {slug!r}.")
    return found


def task_size(study: Study) -> int:
    """Items per task: the study's own, else ``STEREORANK_TASK_SIZE``."""
    return study.task_size or settings.STEREORANK["TASK_SIZE"]


def overlap(study: Study) -> int:
    """Rankings per task: the study's own, else ``STEREORANK_TASK_OVERLAP``."""
    return study.overlap or settings.STEREORANK["TASK_OVERLAP"]
