"""What the annotation commands share: writing lines to a file or standard output."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterable
from pathlib import Path

from django.core.management.base import CommandError


def write_lines(lines: Iterable[str], out: str | None) -> int:
    """Write to ``out`` (beside it, then renamed: a failed export leaves no half file),
    or to standard output when ``out`` is empty; returns how many lines."""
    written = 0

    def counted():
        nonlocal written
        for line in lines:
            written += 1
            yield line

    if not out:
        sys.stdout.writelines(counted())
        return written
    target = Path(out)
    if not target.parent.is_dir():
        raise CommandError(f"cannot write {out}: folder {target.parent} does not exist")
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8", newline="") as handle:
            handle.writelines(counted())
        os.replace(tmp, target)
    except OSError as error:  # a full disk: the error names the file asked for, not the temp
        raise OSError(error.errno, error.strerror, out) from error
    finally:
        tmp.unlink(missing_ok=True)
    return written
