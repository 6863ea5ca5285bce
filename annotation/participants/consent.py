"""A study's consent as an ethics board reads it: which fields a text still lacks, and
new versions published (filled in by hand, from a file, or with the
demonstration values of ``bin/run``).

A version is never edited once published: a change is a new version, which every
annotator agrees to again before their next task (``annotation.rankings.selectors.has_consent``).
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from annotation.access import roles, scope
from annotation.catalogue.loading import ensure_consent_text, read_catalogue
from annotation.errors import ConsentIncomplete, InvalidAnswer
from annotation.models import ConsentText
from annotation.models.studies import Study

TEMPLATE_MARK = "[to fill in"
"""Marks what a study must still write in the catalogue's template text."""

FIELDS = ConsentText.REQUIRED
LABELS = {name: str(ConsentText._meta.get_field(name).verbose_name) for name in FIELDS}


def missing_fields(text: ConsentText) -> list[str]:
    """The required fields ``text`` leaves blank (the free text counts as blank while it
    still holds the template's "[to fill in ...]" marks), in ``ConsentText.REQUIRED``'s order."""
    missing = [name for name in FIELDS if not str(getattr(text, name)).strip()]
    if "text" not in missing and TEMPLATE_MARK in text.text.lower():
        missing.append("text")
    return missing


def missing_line(study: Study, text: ConsentText) -> str:
    """One line naming what ``study``'s consent text lacks ("" when complete)."""
    missing = missing_fields(text)
    if not missing:
        return ""
    return (
        f"Study {study.slug!r}: its consent text (version {text.version}) lacks "
        f"{', '.join(LABELS[name] for name in missing)}; fill them in "
        f"(Admin > Consent texts, or manage.py consent --study {study.slug} --file FILE)."
    )


def require_complete(study: Study) -> None:
    """``ConsentIncomplete`` naming the missing fields, unless the study's newest consent
    text is complete: no study opens to participants on a stub."""
    line = missing_line(study, ensure_consent_text(study=study))
    if line:
        raise ConsentIncomplete(line.replace(": its", " cannot open: its", 1))


def incomplete_open_studies(viewer) -> list[str]:
    """One line for each open study ``viewer`` has a role in whose newest consent text
    lacks a required field: they keep running, and staff are warned until the fields are
    filled."""
    lines = []
    mine = scope.visible_studies(viewer, roles.ANY_ROLE)
    for study in mine.filter(status=Study.Status.OPEN).order_by("slug"):
        text = ConsentText.objects.filter(study=study).first()
        if text is not None and (line := missing_line(study, text)):
            lines.append(line)
    return lines


def demonstration_values() -> dict:
    """The catalogue's made-up values that let ``bin/run`` open its demo study."""
    return dict(read_catalogue()["consent"]["demonstration"])


@transaction.atomic
def publish(study: Study, values: dict, *, fill_only: bool = False) -> tuple[ConsentText, bool]:
    """A new version of ``study``'s consent text: the newest one with ``values`` put in
    (with ``fill_only``, only into the fields it lacks); (the newest text, False) when
    nothing would change. A text holding any of the catalogue's demonstration values is
    marked as a demonstration. ``InvalidAnswer`` names an unknown field or a bad value,
    and nothing is written."""
    unknown = set(values) - set(FIELDS)
    if unknown:
        raise InvalidAnswer(
            f"Unknown consent field(s) {', '.join(sorted(unknown))}; use {', '.join(FIELDS)}."
        )
    newest = ensure_consent_text(study=study)
    if fill_only:
        lacking = set(missing_fields(newest))
        values = {name: value for name, value in values.items() if name in lacking}
    current = {name: getattr(newest, name) for name in FIELDS}
    merged = {**current, **{name: str(value).strip() for name, value in values.items()}}
    demo = demonstration_values()  # a choice (the legal basis) is nobody's made-up value
    marked = any(merged[n] and merged[n] == demo[n] for n in FIELDS if n != "legal_basis")
    if merged == current and marked == newest.demonstration:
        return newest, False
    text = ConsentText(study=study, version=newest.version + 1, demonstration=marked, **merged)
    try:
        text.full_clean(exclude=["study"])
    except ValidationError as error:
        problems = "; ".join(
            f"{LABELS.get(name, name)}: {' '.join(messages)}"
            for name, messages in error.message_dict.items()
        )
        raise InvalidAnswer(f"Consent text refused: {problems}") from None
    text.save()
    return text, True
