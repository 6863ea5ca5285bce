"""CSV cells a spreadsheet opens as data, never as a formula (CSV injection).

A text cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is
read as a formula by Excel, LibreOffice and Google Sheets (``=HYPERLINK(...)`` sends
the reader to a page, ``=cmd|...`` ran commands in old Excel). Such a cell gets a
leading ``'``, which the spreadsheet shows as text and hides. Numbers stay numbers: an
``int`` or ``float`` is left alone, and so is a text cell that is just a number
(``-3.5``, ``+1e-3``), which no spreadsheet runs. Pure Python; every CSV export (rankings,
perspectives) goes through ``safe_row``.
"""

from __future__ import annotations

import re

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def safe_cell(value: object) -> object:
    """``value`` as a spreadsheet should show it: a formula-like text cell with ``'``
    in front, anything else unchanged."""
    if not isinstance(value, str) or not value.startswith(FORMULA_START):
        return value
    if _NUMBER.fullmatch(value):
        return value
    return "'" + value


def safe_row(row: dict) -> dict:
    """``row`` with every cell through ``safe_cell`` (for ``csv.DictWriter``)."""
    return {key: safe_cell(value) for key, value in row.items()}
