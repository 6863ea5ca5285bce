"""Import prompt-image items from a manifest (CSV or JSONL), all or nothing.

A manifest row has ``prompt`` (text), ``occupation`` (name or slug),
``prompt_type`` (stereotypical / neutral / diverse), ``image`` (a path relative
to the manifest's folder, or absolute) and optionally ``generator`` (a JSON
object; in CSV a JSON string). Every row is checked before anything is written;
if any row is bad, :class:`ManifestError` lists each problem with its row number
and nothing is imported. Each image passes ``annotation.catalogue.images.check_image``
(PNG, JPEG or WebP within the pixel limit) and is stored under a name the server
chooses. Images are identified by their SHA-256, so importing
the same manifest twice into one study creates nothing new.

A prompt text that is not yet known becomes a paraphrase of the original prompt
of that occupation and type (or the original itself, when there is none yet).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from dataclasses import dataclass, field
from pathlib import Path

from django.core.files.base import ContentFile
from django.db import transaction

from annotation.catalogue.images import UnsafeImage, check_image
from annotation.errors import ManifestError
from annotation.models import Item, Occupation, Prompt, PromptType, Study, default_study

MANIFEST_NAMES = ("manifest.jsonl", "manifest.csv")
REQUIRED = ("prompt", "occupation", "prompt_type", "image")


@dataclass
class Row:
    number: int
    prompt: str
    occupation: Occupation
    prompt_type: str
    path: Path
    data: bytes
    sha256: str
    extension: str
    generator: dict = field(default_factory=dict)


def find_manifest(path: Path) -> Path:
    """``path`` itself if it is a file, else the manifest inside the folder."""
    path = Path(path)
    if path.is_dir():
        for name in MANIFEST_NAMES:
            if (path / name).is_file():
                return path / name
        raise ManifestError([f"{path}: no {' or '.join(MANIFEST_NAMES)} in this folder"])
    if not path.is_file():
        raise ManifestError([f"{path}: no such file or folder"])
    return path


def read_rows(manifest: Path) -> list[tuple[int, dict | None, str | None]]:
    """(row number, raw row or None, parse error or None); numbers are 1-based data rows."""
    text = manifest.read_text(encoding="utf-8-sig")
    if manifest.suffix.lower() == ".csv":
        return [(i, dict(r), None) for i, r in enumerate(csv.DictReader(io.StringIO(text)), 1)]
    rows = []
    for i, line in enumerate((ln for ln in text.splitlines() if ln.strip()), 1):
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            rows.append((i, None, f"not valid JSON ({exc.msg})"))
            continue
        rows.append((i, obj, None) if isinstance(obj, dict) else (i, None, "not a JSON object"))
    return rows


def _occupations() -> dict[str, Occupation]:
    index = {}
    for occ in Occupation.objects.all():
        index[occ.slug.lower()] = occ
        index[occ.name.lower()] = occ
    return index


def validate(manifest: Path) -> list[Row]:
    """Check every row; raise ManifestError listing all bad rows."""
    occupations = _occupations()
    # (occupation id, prompt text) -> prompt type, from the database and earlier rows:
    # one text cannot be two prompt types (Prompt is unique by occupation and text).
    known_types = {(p.occupation_id, p.text): p.prompt_type for p in Prompt.objects.all()}
    errors, rows = [], []
    for number, raw, problem in read_rows(manifest):
        where = f"row {number}"
        if problem:
            errors.append(f"{where}: {problem}")
            continue
        missing = [k for k in REQUIRED if not str(raw.get(k) or "").strip()]
        if missing:
            errors.append(f"{where}: missing {', '.join(missing)}")
            continue
        row_errors = []
        occupation = occupations.get(str(raw["occupation"]).strip().lower())
        if occupation is None:
            row_errors.append(f"unknown occupation '{raw['occupation']}'")
        prompt_type = str(raw["prompt_type"]).strip().lower()
        if prompt_type not in PromptType.values:
            row_errors.append(
                f"bad prompt_type '{raw['prompt_type']}' (use {', '.join(PromptType.values)})"
            )
        generator = raw.get("generator") or {}
        if isinstance(generator, str):
            try:
                generator = json.loads(generator)
            except json.JSONDecodeError:
                generator = None
        if not isinstance(generator, dict):
            row_errors.append("generator must be a JSON object")
        path = Path(str(raw["image"]).strip())
        if not path.is_absolute():
            path = manifest.parent / path
        data, extension = b"", ""
        if not path.is_file():
            row_errors.append(f"missing image file {path}")
        else:
            data = path.read_bytes()
            try:
                extension = check_image(data, str(path)).extension
            except UnsafeImage as error:
                row_errors.append(error.message)
        text = str(raw["prompt"]).strip()
        if occupation is not None and prompt_type in PromptType.values:
            seen = known_types.setdefault((occupation.pk, text), prompt_type)
            if seen != prompt_type:
                row_errors.append(f"prompt text is already a {seen} prompt, not {prompt_type}")
        if row_errors:
            errors.extend(f"{where}: {e}" for e in row_errors)
            continue
        rows.append(
            Row(
                number,
                text,
                occupation,
                prompt_type,
                path,
                data,
                hashlib.sha256(data).hexdigest(),
                extension,
                generator,
            )
        )
    if errors:
        raise ManifestError(errors)
    return rows


def _prompt_for(row: Row) -> Prompt:
    existing = Prompt.objects.filter(occupation=row.occupation, text=row.prompt).first()
    if existing:  # validate() made sure its type matches
        return existing
    original = Prompt.objects.filter(
        occupation=row.occupation, prompt_type=row.prompt_type, origin__isnull=True
    ).first()
    return Prompt.objects.create(
        occupation=row.occupation, prompt_type=row.prompt_type, text=row.prompt, origin=original
    )


def import_manifest(path: Path, study: Study | None = None) -> dict:
    """Validate then import into the study (the default one unless given); returns
    ``{"created": n, "skipped": n}`` (skipped = images the study holds already)."""
    study = study or default_study()
    manifest = find_manifest(path)
    rows = validate(manifest)
    known = set(
        Item.objects.filter(study=study, image_sha256__in=[r.sha256 for r in rows]).values_list(
            "image_sha256", flat=True
        )
    )
    created = skipped = 0
    with transaction.atomic():
        for row in rows:
            if row.sha256 in known:
                skipped += 1
                continue
            item = Item(
                study=study,
                prompt=_prompt_for(row),
                image_sha256=row.sha256,
                generator=row.generator,
            )
            # The name and extension are the server's: the decoded format's, not the file's.
            item.image.save(f"{row.sha256[:20]}{row.extension}", ContentFile(row.data), save=False)
            item.save()
            known.add(row.sha256)
            created += 1
    return {"created": created, "skipped": skipped}
