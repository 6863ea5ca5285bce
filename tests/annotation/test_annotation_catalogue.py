"""The catalogue, placeholder items, importing, task building and synthetic annotators."""

import io
import json
from collections import Counter

import pytest
from django.core.management import CommandError, call_command
from PIL import Image

from annotation.catalogue import loading as catalogue
from annotation.catalogue.placeholders import placeholder_png
from annotation.models import (
    AnnotatorProfile,
    ConsentText,
    DemographicField,
    Item,
    Occupation,
    Prompt,
    PromptType,
    Ranking,
    RankingTask,
    TaskItem,
)

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=out)
    return out.getvalue()


def test_catalogue_file_has_40_occupations_with_three_distinct_prompts():
    data = catalogue.read_catalogue()
    occupations = data["occupations"]
    assert len(occupations) == 40
    assert len({o["name"] for o in occupations}) == 40
    for o in occupations:
        assert set(o["prompts"]) == set(PromptType.values)
        assert len(set(o["prompts"].values())) == 3
    keys = {f["key"] for f in data["demographic_fields"]}
    assert {
        "age_band",
        "gender_identity",
        "nationality",
        "country_of_residence",
        "ethnicity",
        "religion_or_belief",
        "disability",
        "education",
        "first_language",
    } <= keys
    assert data["consent"]["version"] == 3 and "erase your data" in data["consent"]["text"]


def test_load_catalogue_is_idempotent():
    run("load_catalogue")
    counts = (
        Occupation.objects.count(),
        Prompt.objects.count(),
        DemographicField.objects.count(),
        ConsentText.objects.count(),
    )
    assert counts == (40, 120, 9, 1)
    for t in PromptType.values:
        assert Prompt.objects.filter(prompt_type=t, origin=None).count() == 40
    run("load_catalogue")
    assert (
        Occupation.objects.count(),
        Prompt.objects.count(),
        DemographicField.objects.count(),
        ConsentText.objects.count(),
    ) == counts


def test_placeholder_images_1200_and_rerun_creates_nothing(media_root):
    run("load_catalogue", "--placeholder-images")
    assert Item.objects.count() == 1200
    assert Item.objects.filter(is_placeholder=True).count() == 1200
    assert Counter(Item.objects.values_list("prompt_id", flat=True)).most_common()[-1][1] == 10
    item = Item.objects.first()
    with Image.open(item.image.path) as img:
        assert img.format == "PNG"
    run("load_catalogue", "--placeholder-images")
    assert Item.objects.count() == 1200


def test_placeholder_png_is_deterministic_and_distinct_per_variant():
    a = placeholder_png("Generate an image of a nurse", "neutral", 0)
    assert a == placeholder_png("Generate an image of a nurse", "neutral", 0)
    assert a != placeholder_png("Generate an image of a nurse", "neutral", 1)


# --- import_items -------------------------------------------------------------


def _png(path, colour):
    Image.new("RGB", (8, 8), colour).save(path)
    return path.name


def _jsonl(path, rows):
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


@pytest.fixture
def loaded(db):
    run("load_catalogue")


def test_import_items_folder_jsonl_is_idempotent(tmp_path, media_root, loaded):
    folder = tmp_path / "batch"
    folder.mkdir()
    rows = [
        {
            "prompt": "Generate an image of a nurse",
            "occupation": "nurse",
            "prompt_type": "neutral",
            "image": _png(folder / "a.png", "red"),
            "generator": {"model": "sdxl", "seed": 1},
        },
        {
            "prompt": "A photo of a nurse at work",
            "occupation": "Nurse",
            "prompt_type": "neutral",
            "image": _png(folder / "b.png", "blue"),
        },
    ]
    _jsonl(folder / "manifest.jsonl", rows)
    assert "2 items imported" in run("import_items", str(folder))
    first = Item.objects.get(generator__model="sdxl")
    assert first.prompt.is_original
    paraphrase = Prompt.objects.get(text="A photo of a nurse at work")
    assert paraphrase.origin == first.prompt
    assert "0 items imported, 2 already present" in run("import_items", str(folder))
    assert Item.objects.count() == 2


def test_import_items_csv(tmp_path, media_root, loaded):
    _png(tmp_path / "c.png", "green")
    (tmp_path / "items.csv").write_text(
        "prompt,occupation,prompt_type,image,generator\n"
        'Generate an image of a pilot,pilot,neutral,c.png,"{""model"": ""x""}"\n'
    )
    run("import_items", str(tmp_path / "items.csv"))
    assert Item.objects.get().generator == {"model": "x"}


def test_import_items_reports_each_bad_row_and_imports_nothing(tmp_path, media_root, loaded):
    (tmp_path / "broken.png").write_bytes(b"not a png")
    rows = [
        {
            "prompt": "Generate an image of a nurse",
            "occupation": "nurse",
            "prompt_type": "neutral",
            "image": _png(tmp_path / "ok.png", "red"),
        },
        {"prompt": "x", "occupation": "astronaut", "prompt_type": "neutral", "image": "ok.png"},
        {"prompt": "x", "occupation": "nurse", "prompt_type": "weird", "image": "ok.png"},
        {"prompt": "x", "occupation": "nurse", "prompt_type": "diverse", "image": "gone.png"},
        {"prompt": "x", "occupation": "nurse", "prompt_type": "diverse", "image": "broken.png"},
        {"occupation": "nurse", "prompt_type": "diverse", "image": "ok.png"},
        {
            "prompt": "Generate an image of a nurse",
            "occupation": "nurse",
            "prompt_type": "diverse",
            "image": "ok.png",
        },
    ]
    manifest = _jsonl(tmp_path / "m.jsonl", rows)
    err = io.StringIO()
    with pytest.raises(CommandError, match="6 problem"):
        call_command("import_items", str(manifest), stdout=io.StringIO(), stderr=err)
    text = err.getvalue()
    assert "row 2: unknown occupation 'astronaut'" in text
    assert "row 3: bad prompt_type 'weird'" in text
    assert "row 4: missing image file" in text
    assert "row 5: " in text and "broken.png: not a PNG, JPEG or WebP image" in text
    assert "row 6: missing prompt" in text
    assert "row 7: prompt text is already a neutral prompt, not diverse" in text
    assert "row 1" not in text
    assert Item.objects.count() == 0
    assert Prompt.objects.count() == 120


# --- build_tasks --------------------------------------------------------------


def test_build_tasks_covers_every_item_mixes_types_and_is_idempotent(media_root):
    run("load_catalogue", "--placeholder-images", "2")  # 6 items per occupation
    run("build_tasks", "--size", "4", "--overlap", "2", "--seed", "3", "--agreement-fraction", "0")
    # Ordinary tasks hold every item once; the gold and check tasks (on by default, one of
    # each per occupation) reuse items already in them.
    ordinary = RankingTask.objects.filter(is_gold=False, check_item__isnull=True)
    in_ordinary = TaskItem.objects.filter(task__in=ordinary)
    assert in_ordinary.count() == Item.objects.count() == 240
    assert in_ordinary.values("item").distinct().count() == 240
    assert not Item.objects.filter(task_items__isnull=True).exists()
    for task in ordinary.prefetch_related("items__prompt"):
        items = list(task.items.all())
        assert task.overlap == 2
        assert {i.prompt.occupation_id for i in items} == {task.occupation_id}
        assert len({i.prompt.prompt_type for i in items}) >= 2
    assert RankingTask.objects.filter(is_gold=True).count() == 40
    assert RankingTask.objects.filter(check_item__isnull=False).count() == 40
    tasks = RankingTask.objects.count()
    run("build_tasks", "--size", "4")
    assert RankingTask.objects.count() == tasks
    run("load_catalogue", "--placeholder-images", "3")  # 120 new items
    run("build_tasks", "--size", "4")
    assert not Item.objects.filter(task_items__isnull=True).exists()
    assert TaskItem.objects.filter(task__in=ordinary).count() == 360


# --- simulate_annotators ------------------------------------------------------


def _simulated_orders():
    return {
        (r.annotator.user.username, r.task_id): r.order
        for r in Ranking.objects.select_related("annotator__user")
    }


def _forget_rankings():
    Ranking.objects.all().delete()
    RankingTask.objects.update(ranking_count=0)
    AnnotatorProfile.objects.all().delete()
    from django.contrib.auth import get_user_model

    get_user_model().objects.all().delete()


def test_simulate_annotators_is_synthetic_and_deterministic(media_root):
    run("load_catalogue", "--placeholder-images", "2")
    run("build_tasks", "--size", "6", "--overlap", "3")
    run("simulate_annotators", "--count", "5", "--tasks-per-annotator", "4", "--seed", "7")
    assert Ranking.objects.count() == 20
    assert AnnotatorProfile.objects.filter(is_synthetic=True).count() == 5
    assert not AnnotatorProfile.objects.filter(is_synthetic=False).exists()
    profile = AnnotatorProfile.objects.first()
    assert profile.consents.filter(withdrawn_at__isnull=True).exists()
    assert set(profile.demographics) <= set(DemographicField.objects.values_list("key", flat=True))
    # The latent model puts stereotypical prompts first more often than diverse ones.
    first = Counter()
    for r in Ranking.objects.all():
        first[Item.objects.get(pk=r.order[0]).prompt.prompt_type] += 1
    assert first["stereotypical"] > first["diverse"]
    # Re-running with the same seed and count adds nothing.
    run("simulate_annotators", "--count", "5", "--tasks-per-annotator", "4", "--seed", "7")
    assert Ranking.objects.count() == 20
    before = _simulated_orders()
    _forget_rankings()
    run("simulate_annotators", "--count", "5", "--tasks-per-annotator", "4", "--seed", "7")
    assert _simulated_orders() == before


def _orders_by_content() -> dict[tuple[str, frozenset], list[str]]:
    """Each ranking as image hashes, keyed by annotator and the task's images: no ids."""
    sha = dict(Item.objects.values_list("pk", "image_sha256"))
    return {
        (r.annotator.user.username, frozenset(sha[i] for i in r.order)): [sha[i] for i in r.order]
        for r in Ranking.objects.select_related("annotator__user")
    }


def test_simulated_rankings_do_not_depend_on_the_ids_the_database_hands_out(media_root):
    """PostgreSQL sequences move on across tests and SQLite's roll back: the same
    tasks under new ids must be ranked the same."""
    run("load_catalogue", "--placeholder-images", "2")
    run("build_tasks", "--size", "6", "--overlap", "3")
    run("simulate_annotators", "--count", "5", "--tasks-per-annotator", "4", "--seed", "7")
    before = _orders_by_content()
    first_ids = set(RankingTask.objects.values_list("pk", flat=True))
    _forget_rankings()
    RankingTask.objects.all().delete()
    run("build_tasks", "--size", "6", "--overlap", "3")
    assert not first_ids & set(RankingTask.objects.values_list("pk", flat=True))
    run("simulate_annotators", "--count", "5", "--tasks-per-annotator", "4", "--seed", "7")
    assert len(before) == 20 and _orders_by_content() == before
