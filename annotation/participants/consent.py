"""A study's consent as an ethics board reads it: which fields a text still lacks, and
new versions published (filled in by hand, from a file, or with the
demonstration values of ``bin/run``).

A version is never edited once published: a change is a new version, which every
annotator agrees to again before their next task (``annotation.rankings.selectors.has_consent``).

Beside the required fields, a version says what a public dataset release may hold of those
who agree to it (``RELEASE``: the rankings, which demographic answers, answers in their own
words; ``training.releases``); a file that leaves them out publishes "no".
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from annotation.catalogue.loading import ensure_consent_text, read_catalogue
from annotation.errors import InvalidAnswer
from annotation.models import ConsentText, DemographicField
from annotation.models.studies import Study

TEMPLATE_MARK = "[to fill in"
"""Marks what a study must still write in the catalogue's template text."""

FIELDS = ConsentText.REQUIRED
RELEASE = ("release_rankings", "release_demographics", "release_free_text")
"""What a release may hold: true or false, a list of demographic field keys, true or false."""
LABELS = {name: str(ConsentText._meta.get_field(name).verbose_name) for name in (*FIELDS, *RELEASE)}


def _release_value(name: str, value):
    """A release field's value from a file, checked for its type (``InvalidAnswer``)."""
    if name == "release_demographics":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise InvalidAnswer(f'{name}: a list of demographic field keys, e.g. ["age_band"].')
        return [v.strip() for v in value]
    if not isinstance(value, bool):
        raise InvalidAnswer(f"{name}: true or false, not {value!r}.")
    return value


def released_answers(text: ConsentText, language: str | None) -> list[str]:
    """The questions whose answers ``text`` lets a public release hold, as a participant
    reading ``language`` sees them (the fields' own translations), in the form's order."""
    keys = set(text.release_demographics or [])
    fields = DemographicField.objects.filter(key__in=keys)
    return [field.translated(language)[0] for field in fields]


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
    unknown = set(values) - set(FIELDS) - set(RELEASE)
    if unknown:
        raise InvalidAnswer(
            f"Unknown consent field(s) {', '.join(sorted(unknown))}; use "
            f"{', '.join((*FIELDS, *RELEASE))}."
        )
    values = {n: _release_value(n, v) if n in RELEASE else v for n, v in values.items()}
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
    current = {name: getattr(newest, name) for name in (*FIELDS, *RELEASE)}
    merged = {
        **current,
        **{n: v if n in RELEASE else str(v).strip() for n, v in values.items()},
    }
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
