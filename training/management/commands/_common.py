"""What the training commands share: lookups and figures (errors: ``core.commands``)."""

from __future__ import annotations

import getpass

from django.core.management.base import CommandError

from annotation.access.scope import SYSTEM
from training import selectors
from training.models import DatasetSnapshot


def get_snapshot(snapshot_id: int) -> DatasetSnapshot:
    """Snapshot ``snapshot_id``, whole; a one-line refusal where there is none."""
    snapshot = selectors.snapshot(snapshot_id, SYSTEM)  # a command: the installation's
    if snapshot is None:
        raise CommandError(f"there is no snapshot {snapshot_id}")
    return snapshot


def fmt_num(value, digits: int = 3) -> str:
    """A figure, or "-" when there is none."""
    return "-" if value is None else f"{value:.{digits}f}"


def fmt_ci(value, ci) -> str:
    """A figure with its 95% interval when it has one: ``0.512 [0.401, 0.610]``."""
    if value is None:
        return "-"
    return fmt_num(value) + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")


def fmt_rho(metrics: dict) -> str:
    return fmt_ci(metrics.get("spearman"), metrics.get("spearman_ci"))


def command_actor(command: str) -> str:
    """How a command signs a registry change: the command and the system user who ran it."""
    return f"manage.py {command} ({getpass.getuser()})"
