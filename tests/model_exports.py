"""Exports shared by the test run's processes (the ``quant_models`` fixture's folder)."""

from __future__ import annotations

import contextlib
import fcntl
from pathlib import Path


@contextlib.contextmanager
def exported_once(folder: Path, name: str):
    """Hold the lock ``name`` of ``folder`` (an flock, across processes, in a file beside
    the folder, not in it) while exporting: a second worker waits, then finds the copy
    made."""
    with open(folder.parent / f".{folder.name}-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
