"""Reads of the scoring side: which version is active, a version's row and gates, a user by
name."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser

from training import selectors, services
from training.models import Checkpoint, Evaluation


def active_version() -> int | None:
    """The active version's number: the scorer's per-request freshness check (one indexed
    row, one column; the weights are read only when the number changes)."""
    return selectors.active_version()


def active_checkpoint() -> Checkpoint | None:
    """The active version's row, if one is active."""
    return selectors.active_checkpoint()


def encoder_gates(checkpoint: Checkpoint) -> list[dict]:
    """The accuracy gates' verdicts and figures of ``checkpoint``, newest first."""
    return selectors.encoder_gates(checkpoint.pk).get(checkpoint.pk, [])


def checkpoint(version: int) -> Checkpoint:
    """Version ``version``'s row; ``VersionNotFound`` when there is none."""
    return services.get_version(version)


def user_named(name: str) -> AbstractBaseUser | None:
    """The user whose user name is ``name``, if there is one."""
    model = get_user_model()
    return model.objects.filter(**{model.USERNAME_FIELD: name}).first()


def score_scale(checkpoint: Checkpoint) -> tuple[float, float] | None:
    """The range of ``checkpoint``'s scores on its own snapshot's eval prompts (its newest
    evaluation when it has none there): the one scale the prompt checker draws every batch
    of this version on. None for a version never evaluated."""
    evaluations = Evaluation.objects.filter(checkpoint=checkpoint)
    own = evaluations.filter(snapshot_id=checkpoint.snapshot_id).first()
    chosen = own or evaluations.order_by("-id").first()
    scores = [float(s) for s in (chosen.predictions or {}).values()] if chosen else []
    return (min(scores), max(scores)) if scores else None
