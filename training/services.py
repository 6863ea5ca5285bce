"""The training side's public writes, in one place for views, commands and schedules.

Each concept has its home module (``snapshots``, ``augmentation``, ``runs``,
``registry``); this module names the entry points the rest of the project uses.
"""

from training.augmentation import AugmentationError, request_augmentation, run_augmentation
from training.registry import (
    RegistryError,
    compare,
    evaluate,
    export_checkpoint,
    get_version,
    import_checkpoint,
    promote,
    rollback,
)
from training.runs import RunError, cancel_run, start_run
from training.snapshots import SnapshotError, create_snapshot

snapshot = create_snapshot

__all__ = [
    "AugmentationError",
    "RegistryError",
    "RunError",
    "SnapshotError",
    "cancel_run",
    "compare",
    "create_snapshot",
    "evaluate",
    "export_checkpoint",
    "get_version",
    "import_checkpoint",
    "promote",
    "request_augmentation",
    "rollback",
    "run_augmentation",
    "snapshot",
    "start_run",
]
