"""A validation study's images made by the optional generator (an OpenAI-compatible images
endpoint, ``training.ml.images``), on the default queue; none unless
``STEREORANK_IMAGES_BASE_URL`` is set (labs otherwise import their images).

The generator works from the study's generation manifest
(``annotation.validation.generation.manifest_rows``), skips the (prompt, seed) pairs that
have an image already, writes each image to a temporary folder with the
generator's name and settings in its row, and hands the lot to the import
(``generation.import_images``): checksums, all or nothing, as for a lab's images.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from django.conf import settings

from annotation.models import Study
from annotation.models.validation import ConditionImage
from annotation.validation import generation
from core import queue
from training.errors import ImageGenerationRefused, ml_refusals
from training.ml.images import OpenAIImages


def generator() -> OpenAIImages:
    """The configured generator; refused when none is (the default)."""
    t = settings.TRAINING
    if not t["IMAGES_BASE_URL"]:
        raise ImageGenerationRefused(
            "no image generator: set STEREORANK_IMAGES_BASE_URL, or generate the manifest's "
            "images elsewhere and import them (validation_images --import)"
        )
    return OpenAIImages(
        t["IMAGES_BASE_URL"], t["IMAGES_MODEL"], t["IMAGES_API_KEY"], t["IMAGES_SIZE"]
    )


def request_images(study: Study, images_per_prompt: int) -> None:
    """Queue ``generate_images`` on the default queue (refused at once without a generator)."""
    generator().close()
    generation.manifest_rows(study, images_per_prompt=images_per_prompt)  # checks the study
    queue.after_commit("training.tasks.generate_images", study.pk, images_per_prompt)


def generate_images(study_id: int, images_per_prompt: int) -> dict:
    """Generate the study's missing images and import them; ``{"created", "skipped"}``."""
    study = Study.objects.get(pk=study_id)
    rows = generation.manifest_rows(study, images_per_prompt=images_per_prompt)
    done = set(
        ConditionImage.objects.filter(prompt__condition__study=study).values_list(
            "prompt_id", "seed"
        )
    )
    todo = [r for r in rows if (r["prompt_id"], r["seed"]) not in done]
    if not todo:
        return {"created": 0, "skipped": len(rows)}
    images = generator()
    try:
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder)
            for row in todo:
                with ml_refusals(ImageGenerationRefused, f"{images.name}: "):
                    data = images.generate(row["prompt"], row["seed"])
                path = root / row["image"]
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
                row["generator"] = {"name": images.name, **images.settings()}
            manifest = root / "generated.jsonl"
            manifest.write_text("".join(json.dumps(r) + "\n" for r in todo), encoding="utf-8")
            return generation.import_images(study, manifest)
    finally:
        images.close()
