"""Reads of the scoring side: which version is active, and a version's row."""

from __future__ import annotations

from training.models import Checkpoint
from training.registry import get_version


def active_version() -> int | None:
    """The active version's number: the scorer's per-request freshness check (one indexed
    row, one column; the weights are read only when the number changes)."""
    return (
        Checkpoint.objects.filter(status=Checkpoint.Status.ACTIVE)
        .values_list("version", flat=True)
        .first()
    )


def checkpoint(version: int) -> Checkpoint:
    """Version ``version``'s row; ``VersionNotFound`` when there is none."""
    return get_version(version)
