"""The catalogue: occupations, their three original prompts, demographic fields,
the consent text and the instructions, loaded idempotently from ``catalogue.json``.

Each occupation also lists, per prompt type, the diversity aspects its prompt
touches (the seven of the DJ-PO model card, ``ASPECTS``). They live in the
catalogue file only, not in the database: the synthetic annotators
(``annotation.studies.simulation``) are their one reader."""

import hashlib
import json
from pathlib import Path

from django.core.files.base import ContentFile
from django.db import transaction
from django.utils.text import slugify

from annotation.catalogue.placeholders import placeholder_png
from annotation.models import (
    ConsentText,
    DemographicField,
    Instructions,
    Item,
    Occupation,
    Prompt,
    Study,
)
from annotation.models.studies import default_study

CATALOGUE = Path(__file__).with_name("catalogue.json")
# The DJ-PO card's seven diversification aspects, as the catalogue names them.
ASPECTS = (
    "religion_belief",
    "race_ethnic_origin",
    "gender_identity_expression",
    "nationality",
    "ability_disability",
    "age",
    "body_type",
)


def read_catalogue(path: Path = CATALOGUE) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def prompt_aspects(path: Path = CATALOGUE) -> dict[tuple[str, str], frozenset[str]]:
    """``{(occupation name, prompt type): aspects}`` from the catalogue; ValueError on a
    name that is not one of ``ASPECTS``."""
    out = {}
    for entry in read_catalogue(path)["occupations"]:
        for prompt_type, aspects in entry.get("aspects", {}).items():
            unknown = set(aspects) - set(ASPECTS)
            if unknown:
                raise ValueError(f"{entry['name']} ({prompt_type}): unknown aspect(s) {unknown}")
            out[(entry["name"], prompt_type)] = frozenset(aspects)
    return out


@transaction.atomic
def load_catalogue(
    placeholders_per_prompt: int = 0, path: Path = CATALOGUE, study: Study | None = None
) -> dict:
    """Create or update everything in the catalogue; returns counts of what was created.

    Occupations, prompts and demographic fields are shared by every study; the
    placeholder items, the consent text and the instructions are the study's (the
    default one unless given).
    """
    study = study or default_study()
    data = read_catalogue(path)
    created = {"occupations": 0, "prompts": 0, "items": 0}
    for entry in data["occupations"]:
        occupation, new = Occupation.objects.update_or_create(
            slug=slugify(entry["name"]), defaults={"name": entry["name"]}
        )
        created["occupations"] += new
        for prompt_type, text in entry["prompts"].items():
            prompt, new = Prompt.objects.update_or_create(
                occupation=occupation,
                prompt_type=prompt_type,
                origin=None,
                defaults={"text": text},
            )
            created["prompts"] += new
            created["items"] += _ensure_placeholders(study, prompt, placeholders_per_prompt)
    for order, field in enumerate(data["demographic_fields"]):
        row, _ = DemographicField.objects.update_or_create(
            key=field["key"],
            defaults={
                "label": field["label"],
                "choices": field["choices"],
                "allow_other": field.get("allow_other", False),
                "help_text": field.get("help_text", ""),
                "order": order,
            },
        )
        # The catalogue's translations replace those of their languages; a language
        # someone added in the admin is kept.
        merged = {**row.translations, **field.get("translations", {})}
        if merged != row.translations:
            DemographicField.objects.filter(pk=row.pk).update(translations=merged)
    ensure_consent_text(data, study)
    ensure_instructions(data, study)
    return created


def ensure_consent_text(data: dict | None = None, study: Study | None = None) -> ConsentText:
    """The study's newest consent text in its default language, else of any language
    (the default study's unless given); the
    catalogue's template (the one source of the default wording, with what a study must
    fill in) is stored first when it has none. A study's own versions are never replaced
    by the template: they change through ``annotation.participants.consent.publish``."""
    study = study or default_study()
    texts = ConsentText.objects.filter(study=study)
    newest = texts.filter(language=study.default_language).first() or texts.first()
    if newest is not None:
        return newest
    consent = (data or read_catalogue())["consent"]
    # A study's versions count from 1 (the catalogue's own number is its wording's
    # revision); the template is English, the source language.
    text, _ = texts.get_or_create(
        study=study, language="en", version=1, defaults={"text": consent["text"]}
    )
    return text


def ensure_instructions(data: dict | None = None, study: Study | None = None) -> Instructions:
    """The study's newest instructions (the default study's unless given); the catalogue's
    version is stored first when it has none (or, when loading the catalogue, when that
    version is missing)."""
    study = study or default_study()
    versions = Instructions.objects.filter(study=study)
    newest = versions.first()
    if newest is not None and data is None:
        return newest
    entry = (data or read_catalogue())["instructions"]
    versions.get_or_create(study=study, version=entry["version"], defaults={"text": entry["text"]})
    return versions.first()


def _ensure_placeholders(study: Study, prompt: Prompt, count: int) -> int:
    existing = prompt.items.filter(study=study, is_placeholder=True).count()
    for variant in range(existing, count):
        png = placeholder_png(prompt.text, prompt.prompt_type, variant)
        sha = hashlib.sha256(png).hexdigest()
        item = Item(
            study=study,
            prompt=prompt,
            image_sha256=sha,
            is_placeholder=True,
            generator={"placeholder": True, "variant": variant},
        )
        item.image.save(f"placeholder-{prompt.pk}-{variant}.png", ContentFile(png), save=False)
        item.save()
    return max(count - existing, 0)
