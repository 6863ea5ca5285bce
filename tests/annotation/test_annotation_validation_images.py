"""A validation study's conditions, generation manifest and image import (issue 17): texts
and provenance frozen, the manifest as JSONL and CSV, images back with checksums and the
generator kept, refused whole in one line when a file is missing or matches no prompt."""

import csv
import hashlib
import io
import json

import pytest
from django.core.management import CommandError, call_command
from PIL import Image

from annotation.catalogue.loading import load_catalogue
from annotation.errors import ConditionError
from annotation.models import Item, Prompt, Study
from annotation.models.validation import Condition, ConditionImage, ConditionPrompt
from annotation.validation import conditions, generation


@pytest.fixture
def study(db, media_root):
    load_catalogue()
    return Study.objects.create(
        slug="val", name="Validation", platform="generic", kind="validation"
    )


def stereotypical(n=3):
    return list(Prompt.objects.filter(origin__isnull=True, prompt_type="stereotypical")[:n])


def two_conditions(study, tmp_path, n=3):
    prompts = stereotypical(n)
    conditions.original(study, prompts)
    rewrites = tmp_path / "rewrites.jsonl"
    rewrites.write_text(
        "".join(
            json.dumps({"prompt": p.text, "rewrite": f"{p.text}, an older woman"}) + "\n"
            for p in prompts
        )
    )
    conditions.from_file(study, rewrites, name="rewritten")
    return prompts


def png(colour) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (16, 16), colour).save(buffer, format="PNG")
    return buffer.getvalue()


def generate(rows, folder):
    """What a lab's generator does with the manifest: one file per row, the row kept."""
    for i, row in enumerate(rows):
        path = folder / row["image"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(png((i % 256, (i * 7) % 256, 99)))
        row["generator"] = {"name": "sdxl-test", "steps": 30, "guidance": 7.5}
    (folder / "back.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder / "back.jsonl"


def test_conditions_keep_texts_and_provenance(study, tmp_path):
    prompts = two_conditions(study, tmp_path)
    base, treat = (study.conditions.get(role=r) for r in ("baseline", "treatment"))
    assert (base.name, base.source) == ("original", "original")
    assert (treat.name, treat.source) == ("rewritten", "file")
    digest = hashlib.sha256((tmp_path / "rewrites.jsonl").read_bytes()).hexdigest()
    assert treat.provenance == {"file": "rewrites.jsonl", "sha256": digest}
    assert [cp.text for cp in base.prompts.order_by("prompt_id")] == [p.text for p in prompts]
    assert {cp.text for cp in treat.prompts.all()} == {f"{p.text}, an older woman" for p in prompts}
    assert conditions.study_prompts(study) == sorted(prompts, key=lambda p: p.pk)


def test_a_condition_must_judge_the_studys_prompts(study, tmp_path):
    prompts = stereotypical(3)
    conditions.original(study, prompts)
    bad = tmp_path / "bad.csv"
    bad.write_text("prompt,rewrite\n" + f'"{prompts[0].text}",a new text\nno such prompt,x\n')
    with pytest.raises(ConditionError, match=r"row 2: 'no such prompt' is not a prompt of study"):
        conditions.from_file(study, bad, name="rewritten")
    few = tmp_path / "few.csv"
    few.write_text("prompt,rewrite\n" + f'"{prompts[0].text}",a new text\n')
    with pytest.raises(ConditionError, match="names 1 prompts, not the study's 3"):
        conditions.from_file(study, few, name="rewritten")
    with pytest.raises(ConditionError, match="has a baseline condition already"):
        conditions.original(study, prompts, name="again")
    assert study.conditions.count() == 1 and ConditionPrompt.objects.count() == 3


def test_manifest_as_jsonl_and_csv(study, tmp_path):
    prompts = two_conditions(study, tmp_path)
    rows = generation.manifest_rows(study, images_per_prompt=2)
    assert len(rows) == 2 * 2 * len(prompts)
    assert {(r["condition"], r["seed"]) for r in rows} == {
        (c, s) for c in ("original", "rewritten") for s in (0, 1)
    }
    assert all(r["images_per_prompt"] == 2 and r["study"] == "val" for r in rows)
    one = generation.manifest_rows(study, images_per_prompt=1, condition="rewritten")
    assert {r["prompt"] for r in one} == {f"{p.text}, an older woman" for p in prompts}
    jsonl = [json.loads(line) for line in generation.write_manifest(rows, "jsonl").splitlines()]
    assert jsonl == rows
    parsed = list(csv.DictReader(io.StringIO(generation.write_manifest(rows, "csv"))))
    assert [r["prompt"] for r in parsed] == [r["prompt"] for r in rows]
    with pytest.raises(ConditionError, match="no condition 'nope'"):
        generation.manifest_rows(study, images_per_prompt=1, condition="nope")


def test_images_come_back_with_checksums_and_the_generator(study, tmp_path):
    two_conditions(study, tmp_path)
    rows = generation.manifest_rows(study, images_per_prompt=2)
    manifest = generate(rows, tmp_path)
    assert generation.import_images(study, manifest) == {"created": len(rows), "skipped": 0}
    for row in rows:
        image = ConditionImage.objects.select_related("item", "prompt__condition").get(
            prompt_id=row["prompt_id"], seed=row["seed"]
        )
        data = (tmp_path / row["image"]).read_bytes()
        assert image.item.image_sha256 == hashlib.sha256(data).hexdigest()
        with Image.open(io.BytesIO(data)) as sent, Image.open(image.item.image) as stored:
            assert stored.format == "PNG" and stored.tobytes() == sent.tobytes()
        assert image.item.generator == {"name": "sdxl-test", "steps": 30, "guidance": 7.5}
        assert image.prompt.condition.name == row["condition"] and not image.item.is_placeholder
    again = generation.import_images(study, manifest)
    assert again == {"created": 0, "skipped": len(rows)}


@pytest.mark.parametrize(
    "spoil, message",
    [
        (lambda rows, folder: (folder / rows[3]["image"]).unlink(), "row 4: missing image file"),
        (
            lambda rows, folder: rows[1].update(prompt_id=99999, prompt="A mystery"),
            "row 2: prompt_id 99999 in condition 'original' is not a prompt of the study",
        ),
        (lambda rows, folder: rows[0].update(condition="other"), "row 1: prompt_id"),
        (
            lambda rows, folder: (folder / rows[2]["image"]).write_text("not a png"),
            "-0.png: not a PNG, JPEG or WebP image",
        ),
    ],
)
def test_a_bad_row_refuses_the_whole_import_in_one_line(study, tmp_path, spoil, message):
    two_conditions(study, tmp_path)
    rows = generation.manifest_rows(study, images_per_prompt=1)
    generate(rows, tmp_path)
    spoil(rows, tmp_path)
    manifest = tmp_path / "spoilt.jsonl"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows))
    err = io.StringIO()
    with pytest.raises(CommandError) as caught:
        call_command("validation_images", "val", "--import", str(manifest), stderr=err)
    assert message in str(caught.value) and "nothing was imported" in str(caught.value)
    assert "\n" not in str(caught.value)
    assert (
        ConditionImage.objects.count() == 0
        and not Item.objects.filter(generator__name="sdxl-test").exists()
    )


def test_placeholder_images_per_condition(study, tmp_path):
    prompts = two_conditions(study, tmp_path)
    made = generation.placeholder_images(study, 2)
    assert made == {"created": 2 * 2 * len(prompts), "skipped": 0}
    assert generation.placeholder_images(study, 2)["created"] == 0
    items = Item.objects.filter(condition_image__isnull=False)
    assert all(i.is_placeholder and i.generator["name"] == "placeholder" for i in items)
    per = {
        c.name: ConditionImage.objects.filter(prompt__condition=c).count()
        for c in Condition.objects.all()
    }
    assert per == {"original": 6, "rewritten": 6}


def test_the_command_writes_the_manifest(study, tmp_path):
    two_conditions(study, tmp_path)
    out = tmp_path / "manifest.csv"
    call_command(
        "validation_images",
        "val",
        "--manifest",
        str(out),
        "--images-per-prompt",
        "3",
        stdout=io.StringIO(),
    )
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 3 * 2 * 3 and rows[0]["images_per_prompt"] == "3"
    with pytest.raises(CommandError, match="no study 'nope'"):
        call_command("validation_images", "nope", "--manifest", str(out))


def test_a_generators_metadata_never_reaches_the_stored_card(study, tmp_path):
    """A PNG with the generator's text chunk (its prompt, the condition) and bytes after
    the image, and a JPEG with EXIF: stored as PNGs of their pixels alone."""
    from PIL import PngImagePlugin

    two_conditions(study, tmp_path, n=1)
    rows = generation.manifest_rows(study, images_per_prompt=1)
    manifest = generate(rows, tmp_path)
    told = PngImagePlugin.PngInfo()
    told.add_text("parameters", "an older woman, condition=rewritten")
    buffer = io.BytesIO()
    Image.new("RGB", (16, 16), (1, 2, 3)).save(buffer, format="PNG", pnginfo=told)
    (tmp_path / rows[0]["image"]).write_bytes(buffer.getvalue() + b"condition=rewritten")
    exif = Image.Exif()
    exif[0x010E] = "condition=original"  # ImageDescription
    buffer = io.BytesIO()
    Image.new("RGB", (16, 16), (9, 9, 9)).save(buffer, format="JPEG", exif=exif)
    (tmp_path / rows[1]["image"]).write_bytes(buffer.getvalue())
    generation.import_images(study, manifest)
    for item in Item.objects.filter(study=study):
        stored = item.image.read()
        assert stored.startswith(b"\x89PNG") and b"condition" not in stored
        assert item.image.name.endswith(".png")
