"""A study's own content per language (issue 39): the consent text and the instructions a
participant reads, the demographic questions' translations, and what each of the study's
languages still lacks before the study may open.

Versions count per study and language. A participant reads the newest version in their
language; a language with none yet shows the study's default language's (a study cannot
open so, ``require_ready``, but a draft can be looked at). English is the source
language: the catalogue's template consent text and instructions are English.
"""

from __future__ import annotations

from django.db import transaction

from annotation.access import roles, scope
from annotation.catalogue.loading import ensure_consent_text, ensure_instructions
from annotation.errors import InvalidAnswer, StudyNotReady
from annotation.models import ConsentText, DemographicField, Instructions
from annotation.models.studies import Study
from annotation.participants import consent
from core.languages import SOURCE


def _newest(versions, study: Study, language: str | None):
    """The newest of ``versions`` (a study's texts or instructions) in ``language``, else in
    the study's default language, else of any language."""
    for code in (language, study.default_language):
        if code and (found := versions.filter(language=code).first()) is not None:
            return found
    return versions.first()


def consent_text(study: Study, language: str | None = None) -> ConsentText:
    """The consent text a participant reading ``language`` is shown (``_newest``; the
    catalogue's English template is stored first when the study has none)."""
    ensure_consent_text(study=study)
    return _newest(ConsentText.objects.filter(study=study), study, language)


def instructions(study: Study, language: str | None = None) -> Instructions:
    """The instructions a participant reading ``language`` is shown (``_newest``; the
    catalogue's English ones are stored first when the study has none)."""
    ensure_instructions(study=study)
    return _newest(Instructions.objects.filter(study=study), study, language)


@transaction.atomic
def publish_instructions(
    study: Study, language: str | None, text: str
) -> tuple[Instructions, bool]:
    """A new version of ``study``'s instructions in ``language`` (offered by the study);
    (the newest, False) when ``text`` is what it already says. ``InvalidAnswer`` for an
    empty text or a language the study does not offer; nothing is written then."""
    language = consent.check_offered(study, language)
    text = (text or "").strip()
    if not text:
        raise InvalidAnswer("The instructions are empty.")
    ensure_instructions(study=study)
    versions = Instructions.objects.select_for_update().filter(study=study, language=language)
    newest = versions.first()
    if newest is not None and newest.text == text:
        return newest, False
    version = (newest.version if newest else 0) + 1
    made = Instructions.objects.create(study=study, language=language, version=version, text=text)
    return made, True


def lacking(study: Study, fields: list[DemographicField] | None = None) -> list[str]:
    """What ``study`` lacks before it may open, one line per language that lacks
    something (its consent text or fields of it, its instructions, translations of the
    active demographic questions, ``fields`` when the caller read them), each saying where
    to fill it in; [] when ready. A study of one language names none."""
    if fields is None:
        fields = list(DemographicField.objects.filter(active=True))
    several = len(study.languages) > 1
    lines = []
    for language in study.languages:
        flag = f" --language {language}" if several else ""
        where = f" in {language}" if several else ""
        missing = []
        text = ConsentText.objects.filter(study=study, language=language).first()
        if text is None:
            missing.append(
                f"no consent text in {language} "
                f"(manage.py consent --study {study.slug} --language {language} --file FILE)"
            )
        elif blank := consent.missing_fields(text):
            missing.append(
                f"its consent text{where} (version {text.version}) lacks "
                f"{', '.join(consent.LABELS[name] for name in blank)}; fill them in (Admin > "
                f"Consent texts, or manage.py consent --study {study.slug}{flag} --file FILE)"
            )
        # English may rest on the catalogue's instructions (stored on first read).
        instructed = Instructions.objects.filter(study=study, language=language).exists()
        if not instructed and language != SOURCE:
            missing.append(
                f"no instructions in {language} "
                f"(manage.py instructions --study {study.slug} --language {language} --file F)"
            )
        for field in fields:
            if untranslated := field.untranslated(language):
                missing.append(
                    f"no {language} translation of the field {field.key} "
                    f"({', '.join(untranslated)}; Admin > Demographic fields, or manage.py "
                    "load_catalogue for the shipped languages)"
                )
        if missing:
            lines.append("; ".join(missing))
    return lines


def require_ready(study: Study) -> None:
    """``StudyNotReady``, one line per language naming what the study lacks (``lacking``);
    nothing when every language has its consent text, instructions and translations."""
    ensure_consent_text(study=study)  # the template, in English: its blanks are named
    if lines := lacking(study):
        raise StudyNotReady(
            "\n".join(f"Study {study.slug!r} cannot open: {line}." for line in lines)
        )


def unready_open_studies(viewer) -> list[str]:
    """One line per language lacking something, for each open study ``viewer`` has a role
    in (``lacking``): they keep running, and staff are warned until it is filled in."""
    mine = scope.visible_studies(viewer, roles.ANY_ROLE)
    fields = list(DemographicField.objects.filter(active=True))  # shared by every study
    return [
        f"Study {study.slug!r}: {line}."
        for study in mine.filter(status=Study.Status.OPEN).order_by("slug")
        for line in lacking(study, fields)
    ]
