"""The catalogue: occupations, their three original prompts, demographic fields,
the consent text and the instructions, loaded idempotently from ``catalogue.json``."""

import hashlib
import json
from pathlib import Path

from django.core.files.base import ContentFile
from django.db import transaction
from django.utils.text import slugify

from .models import ConsentText, DemographicField, Instructions, Item, Occupation, Prompt
from .placeholders import placeholder_png

CATALOGUE = Path(__file__).with_name("catalogue.json")


def read_catalogue(path: Path = CATALOGUE) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


@transaction.atomic
def load_catalogue(placeholders_per_prompt: int = 0, path: Path = CATALOGUE) -> dict:
    """Create or update everything in the catalogue; returns counts of what was created."""
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
            created["items"] += _ensure_placeholders(prompt, placeholders_per_prompt)
    for order, field in enumerate(data["demographic_fields"]):
        DemographicField.objects.update_or_create(
            key=field["key"],
            defaults={
                "label": field["label"],
                "choices": field["choices"],
                "allow_other": field.get("allow_other", False),
                "help_text": field.get("help_text", ""),
                "order": order,
            },
        )
    ensure_consent_text(data)
    ensure_instructions(data)
    return created


def ensure_consent_text(data: dict | None = None) -> ConsentText:
    """The newest consent text; the catalogue's (the one source of the default wording)
    is stored first when none exists."""
    newest = ConsentText.objects.first()
    if newest is not None and data is None:
        return newest
    consent = (data or read_catalogue())["consent"]
    text, _ = ConsentText.objects.get_or_create(
        version=consent["version"], defaults={"text": consent["text"]}
    )
    return ConsentText.objects.first() or text


def ensure_instructions(data: dict | None = None) -> Instructions:
    """The newest instructions; the catalogue's version is stored first when none exists
    (or, when loading the catalogue, when that version is missing)."""
    newest = Instructions.objects.first()
    if newest is not None and data is None:
        return newest
    entry = (data or read_catalogue())["instructions"]
    Instructions.objects.get_or_create(version=entry["version"], defaults={"text": entry["text"]})
    return Instructions.objects.first()


def _ensure_placeholders(prompt: Prompt, count: int) -> int:
    existing = prompt.items.filter(is_placeholder=True).count()
    for variant in range(existing, count):
        png = placeholder_png(prompt.text, prompt.prompt_type, variant)
        sha = hashlib.sha256(png).hexdigest()
        item = Item(
            prompt=prompt,
            image_sha256=sha,
            is_placeholder=True,
            generator={"placeholder": True, "variant": variant},
        )
        item.image.save(f"placeholder-{prompt.pk}-{variant}.png", ContentFile(png), save=False)
        item.save()
    return max(count - existing, 0)
