"""Compile every catalogue under locale/ (``*.po`` -> ``*.mo``) with babel, in pure Python.

``compiled(path)`` is the one way a catalogue becomes its ``.mo``: ``bin/messages compile``
writes it, and tests/annotation/test_annotation_catalogues.py compares the committed file
with it. Fuzzy entries are left out (and the test fails on them)."""

from __future__ import annotations

import io
from pathlib import Path

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

LOCALE = Path(__file__).resolve().parents[1] / "locale"


def compiled(path: Path) -> bytes:
    with path.open("rb") as handle:
        catalogue = read_po(handle)
    out = io.BytesIO()
    write_mo(out, catalogue, use_fuzzy=False)
    return out.getvalue()


def main() -> None:
    for po in sorted(LOCALE.glob("*/LC_MESSAGES/*.po")):
        po.with_suffix(".mo").write_bytes(compiled(po))
        print(f"compiled {po.relative_to(LOCALE.parent)}")


if __name__ == "__main__":
    main()
