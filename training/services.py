"""The training side's public writes, in one place for views, commands and schedules.

Each concept has its home module (``snapshots``, ``augmentation``, ``runs``,
``registry``, ``evaluation``); this module names the entry points the rest of the
project uses.
``export_checkpoint`` is the registry's export with the version's model card.
Beside them, what callers pass in: the label weightings a snapshot takes, the
steering parser, a schedule's settings (their defaults seed a run's form); and the
stored perspective report as JSON. Reads are in ``training.selectors``, refusals in
``training.errors``.
"""

from training import selectors
from training.perspectives.export import across_versions as alignment_across_versions
from training.perspectives.export import report as perspective_report
from training.perspectives.group_check import before_promotion
from training.perspectives.services import (
    compare_versions,
    compute_reports,
    report_fields,
    report_snapshot,
    request_reports,
)
from training.registry.card import export_checkpoint, model_card
from training.registry.evaluation import compare, evaluate, request_evaluations
from training.registry.services import (
    get_version,
    import_checkpoint,
    rollback,
)
from training.registry.services import promote as activate
from training.runs.augmentation import request_augmentation, run_augmentation
from training.runs.services import cancel_run, start_run
from training.schedule_settings import ScheduleSettings
from training.snapshots.services import NONE, RELIABILITY, WEIGHTINGS, create_snapshot
from training.snapshots.steering import parse as parse_steering


def promote(
    checkpoint,
    user=None,
    reason: str = "",
    actor: str = "",
    *,
    force: bool = False,
    compute: bool = True,
):
    """Every promotion door's promotion: the group check first
    (``perspectives.group_check.before_promotion``; ``compute`` False in a request, so
    missing reports are queued, not computed), then the registry's activation, with the
    check's words recorded beside ``reason``."""
    active = selectors.active_checkpoint()
    words = before_promotion(checkpoint, compute=compute, force=force, reason=reason)
    recorded = "; ".join(part for part in (reason.strip(), words) if part)
    return activate(checkpoint, user=user, reason=recorded, actor=actor, checked_against=active)


__all__ = [
    "NONE",
    "alignment_across_versions",
    "RELIABILITY",
    "WEIGHTINGS",
    "ScheduleSettings",
    "cancel_run",
    "compare",
    "compare_versions",
    "compute_reports",
    "create_snapshot",
    "evaluate",
    "export_checkpoint",
    "get_version",
    "import_checkpoint",
    "model_card",
    "parse_steering",
    "perspective_report",
    "activate",
    "promote",
    "request_augmentation",
    "report_fields",
    "report_snapshot",
    "request_evaluations",
    "request_reports",
    "rollback",
    "run_augmentation",
    "start_run",
]
