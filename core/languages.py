"""The languages a study may offer its participants (issue 39): English, the source
language, and each of ``settings.LANGUAGES`` whose compiled catalogue ships under
``LOCALE_PATHS``; with each catalogue's review status, as its source's header says
(``Reviewed-By`` in the ``.po``: who reviewed it and when, or ``unreviewed``; the compiled
``.mo`` keeps only gettext's own header fields)."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from django.conf import settings

SOURCE = "en"

GROUPING = "portal_language"
"""The grouping of rankings by the portal's language they were made in, beside the
demographic fields' keys in the quality and perspective reports (not ``language``: a lab
may have a demographic question keyed so)."""
GROUPING_LABEL = "Language (of the portal)"


def _catalogue(code: str) -> Path | None:
    for folder in settings.LOCALE_PATHS:
        path = Path(folder) / code / "LC_MESSAGES" / "django.mo"
        if path.exists():
            return path
    return None


@cache
def available() -> dict[str, str]:
    """Code -> the language's name in itself, for the languages a study may offer."""
    return {
        code: name
        for code, name in settings.LANGUAGES
        if code == SOURCE or _catalogue(code) is not None
    }


def review(code: str) -> str:
    """Who reviewed the language's catalogue and when, or "unreviewed" ("source" for
    English)."""
    if code == SOURCE:
        return "source"
    path = _catalogue(code)
    if path is None:
        return "missing"
    source = path.with_suffix(".po")
    found = (
        re.search(r'^"Reviewed-By: (.*?)\\n"$', source.read_text(), re.M)
        if source.exists()
        else None
    )
    return found.group(1).strip() if found else "unreviewed"


def refusal(codes) -> str | None:
    """Why ``codes`` cannot be a study's languages (None when they can): a list of
    distinct codes of ``available()``, at least one."""
    if not isinstance(codes, list) or not all(isinstance(c, str) for c in codes):
        return 'a list of language codes, e.g. ["en", "nl"]'
    if not codes:
        return "name at least one language"
    if len(set(codes)) != len(codes):
        return "name each language once"
    unknown = [c for c in codes if c not in available()]
    if unknown:
        return (
            f"no translation catalogue for {', '.join(unknown)}: "
            f"the languages available are {', '.join(available())}"
        )
    return None
