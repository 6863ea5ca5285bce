"""The shipped translation catalogues (issue 39): complete (no untranslated or fuzzy entry),
each translation keeping its source's placeholders and markup, and each committed ``.mo``
exactly its ``.po`` compiled (``bin/compile_messages.compiled``, babel; git keeps no file
times, so this is how a stale ``.mo`` shows)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

from core import languages

ROOT = Path(__file__).resolve().parents[2]
CATALOGUES = sorted((ROOT / "locale").glob("*/LC_MESSAGES/*.po"))
SLOTS = re.compile(r"%\(\w+\)s|\{\w+\}|<[^>]+>")


def _compiler():
    spec = importlib.util.spec_from_file_location(
        "compile_messages", ROOT / "bin/compile_messages.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_offered_language_but_the_source_ships_a_catalogue():
    assert {p.parts[-3] for p in CATALOGUES} >= set(languages.available()) - {"en"}
    assert set(languages.available()) == {"en", "nl", "ar"}


@pytest.mark.parametrize("path", CATALOGUES, ids=lambda p: "/".join(p.parts[-3:]))
def test_the_catalogue_is_complete_and_keeps_every_slot(path):
    with path.open("rb") as handle:
        catalogue = read_po(handle)
    entries = [m for m in catalogue if m.id]
    assert entries
    untranslated = [
        m.id for m in entries if not all([m.string] if isinstance(m.string, str) else m.string)
    ]
    fuzzy = [m.id for m in entries if m.fuzzy]
    assert not untranslated, f"untranslated: {untranslated}"
    assert not fuzzy, f"fuzzy: {fuzzy}"
    for m in entries:
        source = m.id if isinstance(m.id, str) else m.id[-1]  # a plural: its plural form
        for form in [m.string] if isinstance(m.string, str) else m.string:
            assert sorted(SLOTS.findall(source)) == sorted(SLOTS.findall(form)), m.id


@pytest.mark.parametrize("path", CATALOGUES, ids=lambda p: "/".join(p.parts[-3:]))
def test_the_committed_mo_is_its_po_compiled(path):
    compiled = _compiler().compiled(path)
    assert path.with_suffix(".mo").read_bytes() == compiled, (
        f"{path.with_suffix('.mo')} is stale: run bin/messages compile"
    )


def test_each_catalogue_says_whether_it_was_reviewed():
    assert languages.review("en") == "source"
    for code in ("nl", "ar"):
        assert languages.review(code) == "unreviewed"  # README, "Languages"
