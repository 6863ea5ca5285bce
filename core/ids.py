"""Row ids read from text (a path, a query parameter): one rule for what counts as one."""

from __future__ import annotations

import re

MAX_ID = 2**63 - 1
"""PostgreSQL's bigint: a bigger id would overflow in the query (a 500, not a 404)."""

ID_PATTERN = r"[0-9]+"
"""An id in a URL pattern: ASCII digits only (``\\d`` takes any script's digits, so
``/rankings/١/`` would read ranking 1); ``as_id`` bounds its value."""

_DIGITS = re.compile(r"[0-9]{1,19}")


def as_id(raw: str | None) -> int | None:
    """``raw`` as a row id (ASCII digits, 1 to ``MAX_ID``), or None: ``str.isdigit`` takes
    "²" and "١", which ``int`` refuses or reads, and any length."""
    if raw is None or not _DIGITS.fullmatch(raw):
        return None
    value = int(raw)
    return value if 1 <= value <= MAX_ID else None
