"""Reads of the scoring side: which version is active, and a version's row."""

from __future__ import annotations

from training import selectors, services
from training.models import Checkpoint


def active_version() -> int | None:
    """The active version's number: the scorer's per-request freshness check (one indexed
    row, one column; the weights are read only when the number changes)."""
    return selectors.active_version()


def checkpoint(version: int) -> Checkpoint:
    """Version ``version``'s row; ``VersionNotFound`` when there is none."""
    return services.get_version(version)
