"""A study's consent as an ethics board reads it: which fields a text still lacks, and
new versions published (filled in by hand, from a file, or with the
demonstration values of ``bin/run``).

A version is never edited once published: a change is a new version, which every
annotator agrees to again before their next task (``annotation.rankings.selectors.has_consent``).
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from annotation.catalogue.loading import ensure_consent_text, read_catalogue
from annotation.errors import InvalidAnswer
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


def demonstration_values() -> dict:
    """The catalogue's made-up values that let ``bin/run`` open its demo study."""
    return dict(read_catalogue()["consent"]["demonstration"])


NEUTRAL = ("contact_email", "legal_basis")
"""The fields that read the same in every language: a language's first version starts
with the default language's (the rest is written in that language)."""


def check_offered(study: Study, language: str | None) -> str:
    """``language`` (the study's default for None) if the study offers it; otherwise
    ``InvalidAnswer`` naming the languages it offers."""
    language = language or study.default_language
    if language not in study.languages:
        raise InvalidAnswer(
            f"Study {study.slug!r} does not offer {language!r}; its languages are "
            f"{', '.join(study.languages)} (create_study --languages, or the staff API)."
        )
    return language


@transaction.atomic
def publish(
    study: Study, values: dict, *, language: str | None = None, fill_only: bool = False
) -> tuple[ConsentText, bool]:
    """A new version of ``study``'s consent text in ``language`` (one the study offers; its
    default for None): the newest one in that language with ``values`` put in (with
    ``fill_only``, only into the fields it lacks); (the newest text, False) when nothing
    would change. A language's first version starts from the default language's
    ``NEUTRAL`` fields. A text holding any of the catalogue's demonstration values is
    marked as a demonstration. ``InvalidAnswer`` names an unknown field, a bad value or a
    language the study does not offer, and nothing is written."""
    language = check_offered(study, language)
    unknown = set(values) - set(FIELDS)
    if unknown:
        raise InvalidAnswer(
            f"Unknown consent field(s) {', '.join(sorted(unknown))}; use {', '.join(FIELDS)}."
        )
    base = ensure_consent_text(study=study)  # the English template when it has none
    texts = ConsentText.objects.select_for_update().filter(study=study, language=language)
    newest = texts.first()
    if newest is None:  # this language's first version
        newest = ConsentText(study=study, language=language, version=0, text="")
        for name in NEUTRAL:
            setattr(newest, name, getattr(base, name))
    if fill_only:
        lacking = set(missing_fields(newest))
        values = {name: value for name, value in values.items() if name in lacking}
    current = {name: getattr(newest, name) for name in FIELDS}
    merged = {**current, **{name: str(value).strip() for name, value in values.items()}}
    demo = demonstration_values()  # a choice (the legal basis) is nobody's made-up value
    marked = any(merged[n] and merged[n] == demo[n] for n in FIELDS if n != "legal_basis")
    if newest.pk and merged == current and marked == newest.demonstration:
        return newest, False
    text = ConsentText(
        study=study,
        language=language,
        version=newest.version + 1,
        demonstration=marked,
        **merged,
    )
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
