"""A validation study's images: the generation manifest out, the generated images back in.

* ``manifest_rows``: one row per image to generate (study, condition, occupation,
  ``prompt_id``, ``prompt``: the condition's text, ``seed``,
  ``images_per_prompt``, ``image``: the file name to write), for whatever
  text-to-image model the lab uses; ``write_manifest`` as JSONL or CSV.
* ``import_images``: the manifest's rows with the generated files, back. Each
  row names its ``condition`` and ``prompt_id`` (or ``prompt``, the text),
  ``seed``, ``image`` (relative to the manifest's folder) and optionally
  ``generator`` (a JSON object: the generator's name and settings, kept on the
  item). Every row is checked first; a missing file, one that is not a PNG, JPEG or
  WebP image within the pixel limit (``annotation.catalogue.images``), or a row that
  matches no prompt of the study, refuses the whole import in one line naming it. The
  stored file's name and extension are the server's (the decoded format's). Images
  are known by their SHA-256: importing the same manifest twice adds nothing.
* ``placeholder_images``: a card per (prompt, seed) showing the condition's
  text (``annotation.catalogue.placeholders``), to run the path without a model.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path

from django.core.files.base import ContentFile
from django.db import transaction

from annotation.catalogue.images import UnsafeImage, check_image, pixels_only
from annotation.catalogue.importing import read_rows
from annotation.catalogue.placeholders import placeholder_png
from annotation.errors import ConditionError
from annotation.models import Item, Study
from annotation.models.validation import ConditionImage, ConditionPrompt

FIELDS = (
    "study",
    "condition",
    "occupation",
    "prompt_id",
    "prompt",
    "seed",
    "images_per_prompt",
    "image",
)


def _prompts(study: Study, condition: str | None = None):
    qs = ConditionPrompt.objects.filter(condition__study=study).select_related(
        "condition", "prompt__occupation"
    )
    if condition is not None:
        if not study.conditions.filter(name=condition).exists():
            raise ConditionError(f"study {study.slug} has no condition {condition!r}")
        qs = qs.filter(condition__name=condition)
    return qs.order_by("condition__role", "prompt__occupation__name", "prompt_id")


def manifest_rows(
    study: Study, *, images_per_prompt: int, condition: str | None = None, first_seed: int = 0
) -> list[dict]:
    """One row per image to generate: each prompt of each condition (or one) x seeds."""
    if images_per_prompt < 1:
        raise ConditionError(f"images per prompt must be at least 1, not {images_per_prompt}")
    rows = []
    for cp in _prompts(study, condition):
        for seed in range(first_seed, first_seed + images_per_prompt):
            rows.append(
                {
                    "study": study.slug,
                    "condition": cp.condition.name,
                    "occupation": cp.prompt.occupation.name,
                    "prompt_id": cp.pk,
                    "prompt": cp.text,
                    "seed": seed,
                    "images_per_prompt": images_per_prompt,
                    "image": f"{cp.condition.name}/{cp.pk}-{seed}.png",
                }
            )
    if not rows:
        raise ConditionError(f"study {study.slug} has no conditions yet: nothing to generate")
    return rows


def write_manifest(rows: list[dict], fmt: str) -> str:
    """The rows as JSONL (``jsonl``) or CSV (``csv``) text."""
    if fmt == "jsonl":
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=FIELDS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        return out.getvalue()
    raise ConditionError(f"format {fmt!r}: use jsonl or csv")


@dataclass(frozen=True)
class _Row:
    number: int
    prompt: ConditionPrompt
    seed: int
    data: bytes
    sha256: str
    suffix: str
    generator: dict


def _generator(raw) -> dict | None:
    value = raw.get("generator") or {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return None
    return value if isinstance(value, dict) else None


def _check_row(number: int, raw: dict, folder: Path, prompts: dict) -> _Row:
    """One manifest row checked against the study; ``ConditionError`` saying what is wrong."""
    condition = str(raw.get("condition") or "").strip()
    key = str(raw.get("prompt_id") or "").strip()
    text = str(raw.get("prompt") or "").strip()
    cp = prompts.get((condition, key)) or prompts.get((condition, text.lower()))
    if cp is None:
        shown = f"prompt_id {key}" if key else repr(text[:60])
        raise ConditionError(f"{shown} in condition {condition!r} is not a prompt of the study")
    try:
        seed = int(str(raw.get("seed", "")).strip())
    except ValueError:
        raise ConditionError(f"seed {raw.get('seed')!r} is not a whole number") from None
    if seed < 0:
        raise ConditionError(f"seed {seed} is negative")
    generator = _generator(raw)
    if generator is None:
        raise ConditionError("generator must be a JSON object")
    name = str(raw.get("image") or "").strip()
    path = Path(name) if Path(name).is_absolute() else folder / name
    if not name or not path.is_file():
        raise ConditionError(f"missing image file {path}")
    data = path.read_bytes()
    try:
        check_image(data, str(path))
    except UnsafeImage as error:
        raise ConditionError(error.message) from None
    # Stored as its pixels only (no generator's metadata: the cards are blinded); known by
    # the file's own checksum, so importing the same file again skips it.
    digest = hashlib.sha256(data).hexdigest()
    return _Row(number, cp, seed, pixels_only(data), digest, ".png", generator)


def _store(study: Study, rows: list[_Row], placeholder: bool = False) -> dict:
    """Write the checked rows' items (the study's) and their condition images; images the
    study holds already are skipped."""
    known = {
        i.image_sha256: i
        for i in Item.objects.filter(
            study=study, image_sha256__in=[r.sha256 for r in rows]
        ).select_related("condition_image")
    }
    taken = {
        (ci.prompt_id, ci.seed): ci.item.image_sha256
        for ci in ConditionImage.objects.filter(
            prompt__in={r.prompt.pk for r in rows}
        ).select_related("item")
    }
    created = skipped = 0
    with transaction.atomic():
        for r in rows:
            where = f"row {r.number}"
            same = known.get(r.sha256)
            if same is not None:
                image = getattr(same, "condition_image", None)
                if image is None or (image.prompt_id, image.seed) != (r.prompt.pk, r.seed):
                    raise ConditionError(
                        f"{where}: this image is already item {same.pk}, of another prompt or seed"
                    )
                skipped += 1
                continue
            if (r.prompt.pk, r.seed) in taken:
                raise ConditionError(
                    f"{where}: prompt_id {r.prompt.pk} seed {r.seed} has another image already"
                )
            item = Item(
                study=study,
                prompt=r.prompt.prompt,
                image_sha256=r.sha256,
                generator=r.generator,
                is_placeholder=placeholder,
            )
            item.image.save(f"{r.sha256[:20]}{r.suffix}", ContentFile(r.data), save=False)
            item.save()
            ConditionImage.objects.create(item=item, prompt=r.prompt, seed=r.seed)
            known[r.sha256] = item
            taken[(r.prompt.pk, r.seed)] = r.sha256
            created += 1
    return {"created": created, "skipped": skipped}


def import_images(study: Study, manifest: Path) -> dict:
    """Check every row of ``manifest`` against the study, then import all or nothing;
    ``{"created": n, "skipped": n}`` (skipped: images imported before)."""
    manifest = Path(manifest)
    if not manifest.is_file():
        raise ConditionError(f"{manifest}: no such file")
    prompts = {}
    for cp in _prompts(study):
        prompts[(cp.condition.name, str(cp.pk))] = cp
        prompts[(cp.condition.name, cp.text.lower())] = cp
    rows, errors = [], []
    for number, raw, problem in read_rows(manifest):
        try:
            if problem:
                raise ConditionError(problem)
            rows.append(_check_row(number, raw, manifest.parent, prompts))
        except ConditionError as error:
            errors.append(f"row {number}: {error.message}")
    if not rows and not errors:
        errors.append("no rows")
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise ConditionError(f"{manifest.name}: {errors[0]}{more}; nothing was imported")
    try:
        return _store(study, rows)
    except ConditionError as error:
        raise ConditionError(f"{manifest.name}: {error.message}; nothing was imported") from None


def placeholder_images(study: Study, images_per_prompt: int) -> dict:
    """Placeholder cards for every prompt of every condition, seeds ``0..n-1`` (idempotent)."""
    rows = []
    for n, row in enumerate(manifest_rows(study, images_per_prompt=images_per_prompt), 1):
        cp = ConditionPrompt.objects.select_related("prompt").get(pk=row["prompt_id"])
        png = placeholder_png(
            cp.text,
            cp.prompt.prompt_type,
            row["seed"],
            f"study {study.slug}, card {cp.pk}-{row['seed']}",
        )
        rows.append(
            _Row(
                n,
                cp,
                row["seed"],
                png,
                hashlib.sha256(png).hexdigest(),
                ".png",
                {"name": "placeholder", "placeholder": True},
            )
        )
    return _store(study, rows, placeholder=True)
