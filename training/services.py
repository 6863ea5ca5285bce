"""The training side's public writes, in one place for views, commands and schedules.

Each concept has its home module (``snapshots``, ``augmentation``, ``runs``,
``registry``, ``evaluation``); this module names the entry points the rest of the
project uses.
Reads are in ``training.selectors``, refusals in ``training.errors``.
"""

from training.augmentation import request_augmentation, run_augmentation
from training.evaluation import compare, evaluate, request_evaluations
from training.perspectives import (
    compare_versions,
    compute_reports,
    report_fields,
    report_snapshot,
    request_reports,
)
from training.registry import (
    export_checkpoint,
    get_version,
    import_checkpoint,
    promote,
    rollback,
)
from training.runs import cancel_run, start_run
from training.snapshots import create_snapshot

__all__ = [
    "cancel_run",
    "compare",
    "compare_versions",
    "compute_reports",
    "create_snapshot",
    "evaluate",
    "export_checkpoint",
    "get_version",
    "import_checkpoint",
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
