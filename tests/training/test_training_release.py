"""A snapshot released as a Hugging Face dataset (training/releases/, manage.py
export_dataset): what ``datasets`` loads, the card, and what consent allows to publish.

The world (k = 3): four occupations of 4 items each (a prompt group per occupation), a task
per occupation and a mixed task (two nurse and two pilot items, so a ranking can straddle
the split). Consent v1 is the template (from before the release fields: "no"); v2 allows
the rankings with gender, age band and town, no own words; v3 says no. Eight annotators
agree to v2: three women 18-24 of Utrecht, three men 25-34, one woman 25-34 (a combination
of one) and one "non-binary" in her own words (own words not allowed: "other", alone).
``old`` agreed to v1, ``denied`` to v3, ``gone`` to v2 and is erased after the snapshot.
Everyone ranks every task; the snapshot's seed puts nurse and pilot on different sides.
"""

from __future__ import annotations

import io
import random
import re
from collections import Counter
from itertools import combinations

import pytest
import yaml
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from privacy_claims import says

from annotation.models import AnnotatorProfile, ConsentText, DemographicField, RankedItem, Ranking
from annotation.models.studies import Erasure
from annotation.participants import consent, services
from annotation.participants.erasure import erase_annotator
from annotation.rankings.exports import pseudonym
from annotation.studies.lifecycle import default_study
from tests.hub_server import FakeHub
from training.releases.card import size_category
from training.releases.demographics import coarsen
from training.snapshots.services import create_snapshot

pytestmark = pytest.mark.django_db
datasets = pytest.importorskip("datasets")
pq = pytest.importorskip("pyarrow.parquet")

K = 3
OCCUPATIONS = ("nurse", "pilot", "judge", "chef")
CONFIGS = ("rankings", "items", "labels", "pairs")
RELEASED = {
    "w1": {"gender": "woman", "age_band": "18-24", "town": "Utrecht"},
    "w2": {"gender": "woman", "age_band": "18-24", "town": "Utrecht"},
    "w3": {"gender": "woman", "age_band": "18-24", "town": "Utrecht"},
    "m1": {"gender": "man", "age_band": "25-34"},
    "m2": {"gender": "man", "age_band": "25-34"},
    "m3": {"gender": "man", "age_band": "25-34"},
    "lone": {"gender": "woman", "age_band": "25-34"},
    "nb": {"gender": "non-binary", "age_band": "18-24"},
}
TOKEN = "hf_fake_token_never_printed_0123456789"


def _person(name: str, answers: dict) -> AnnotatorProfile:
    user = get_user_model().objects.create_user(name, password="pw-123456")
    profile = services.get_profile(user)
    services.give_consent(profile)
    services.save_demographics(profile, answers)
    return profile


@pytest.fixture
def world(db, settings, make_tasks, store_ranking):
    settings.STEREORANK = {**settings.STEREORANK, "GROUP_K": K, "QUALITY_N_BOOT": 50}
    DemographicField.objects.create(
        key="gender", label="Gender", choices=["woman", "man"], allow_other=True
    )
    DemographicField.objects.create(key="age_band", label="Age band", choices=["18-24", "25-34"])
    DemographicField.objects.create(key="town", label="Town")  # free text
    study = default_study()
    tasks = {o: make_tasks(1, 4, overlap=20, occupation=o)[0] for o in OCCUPATIONS}
    items = {o: sorted(t.items.values_list("pk", flat=True)) for o, t in tasks.items()}
    mixed = make_tasks(1, 0, overlap=20, occupation="nurse")[0]
    mixed.items.set(items["nurse"][:2] + items["pilot"][:2])
    tasks["mixed"] = mixed
    old = _person("old", {"gender": "woman", "age_band": "18-24"})  # template: v1
    assert old.consents.get().text.version == 1
    release = {"release_rankings": True, "release_demographics": ["gender", "age_band", "town"]}
    consent.publish(study, release)
    people = {name: _person(name, answers) for name, answers in RELEASED.items()}
    gone = _person("gone", {"gender": "man", "age_band": "25-34"})
    consent.publish(study, {"release_rankings": False, "release_demographics": []})
    denied = _person("denied", {"gender": "man", "age_band": "25-34"})
    rng = random.Random(0)
    everyone = [*people.values(), old, gone, denied]
    for profile in everyone:
        for task in tasks.values():  # mostly agreeing, never the shown order
            shown = sorted(task.items.values_list("pk", flat=True))
            order = shown[::-1]
            at = rng.randrange(len(order) - 1)
            order[at], order[at + 1] = order[at + 1], order[at]
            store_ranking(profile, task, order, shown=shown)
    assert not AnnotatorProfile.objects.filter(status="excluded").exists()
    for seed in range(20):  # a split with nurse and pilot on different sides
        snapshot = create_snapshot(seed=seed, eval_fraction=0.5)
        side = {r["item_id"]: r["split"] for r in snapshot.examples}
        if side[items["nurse"][0]] != side[items["pilot"][0]]:
            break
    else:
        pytest.fail("no seed split nurse from pilot")
    erase_annotator(gone, via=Erasure.Via.STAFF)
    return {"snapshot": snapshot, "people": people, "old": old, "denied": denied, "gone": gone}


def export(snapshot, out, *extra) -> str:
    stdout = io.StringIO()
    call_command(
        "export_dataset", "default", "--snapshot", str(snapshot.pk), "--license", "cc-by-4.0",
        "--out", str(out), *extra, stdout=stdout, stderr=io.StringIO(),
    )  # fmt: skip
    return stdout.getvalue()


def parquet_rows(out, config: str) -> dict[str, list[dict]]:
    return {
        split: pq.read_table(out / f"data/{config}/{split}-00000-of-00001.parquet").to_pylist()
        for split in ("train", "eval")
    }


def front_matter(out) -> tuple[dict, str]:
    text = (out / "README.md").read_text()
    _, meta, body = text.split("---\n", 2)
    return yaml.safe_load(meta), body


def expected(world) -> dict:
    """The release's row counts, counted from the database and the snapshot directly."""
    snapshot = world["snapshot"]
    split = {r["item_id"]: r["split"] for r in snapshot.examples}
    texts = {r["item_id"]: r["text"] for r in snapshot.examples}
    mine = [p.pk for p in world["people"].values()]
    counts = {c: Counter() for c in CONFIGS}
    labelled = set()
    for ranking in Ranking.objects.filter(annotator__in=mine):
        ranked = list(RankedItem.objects.filter(ranking=ranking).values_list("item_id", flat=True))
        labelled |= set(ranked)
        for side in ("train", "eval"):
            here = [i for i in ranked if split[i] == side]
            counts["rankings"][side] += len(here) >= 2
            counts["pairs"][side] += sum(texts[a] != texts[b] for a, b in combinations(here, 2))
    for item, side in split.items():
        counts["items"][side] += 1
        counts["labels"][side] += item in labelled
    return counts


@says(
    "A dataset release (`manage.py export_dataset`) holds only the rankings of annotators "
    "whose consent version allowed a public release, and never an erased person's."
)
def test_datasets_loads_every_config_and_split_with_the_rows_counted_independently(world, tmp_path):
    out = tmp_path / "release"
    printed = export(world["snapshot"], out)
    counts = expected(world)
    for config in CONFIGS:
        loaded = datasets.load_dataset(str(out), config, cache_dir=str(tmp_path / "cache"))
        assert set(loaded) == {"train", "eval"}
        assert {s: loaded[s].num_rows for s in loaded} == dict(counts[config]), config
    default = datasets.load_dataset(str(out), cache_dir=str(tmp_path / "cache"))
    assert default["train"].num_rows == counts["rankings"]["train"]
    # eight released annotators: not old (v1), denied (v3) nor gone (erased)
    rankings = parquet_rows(out, "rankings")
    annotators = {r["annotator"] for rows in rankings.values() for r in rows}
    assert len(annotators) == len(RELEASED) == 8
    assert "annotators: 8 of 10 whose rankings count" in printed  # gone's are deleted
    # the mixed task's rankings are cut at the split: each part holds its side's items
    side = {r["item_id"]: r["split"] for r in world["snapshot"].examples}
    for split, rows in rankings.items():
        for row in rows:
            assert {side[i] for tier in row["tiers"] for i in tier} == {split}
    assert counts["rankings"]["train"] + counts["rankings"]["eval"] > 8 * 5


def test_labels_are_the_released_rankings_mean_place(world, tmp_path):
    out = tmp_path / "release"
    export(world["snapshot"], out)
    labels = {r["item_id"]: r for rows in parquet_rows(out, "labels").values() for r in rows}
    mine = [p.pk for p in world["people"].values()]
    item = next(iter(labels))
    places = [
        position / (len(order) - 1)
        for order, position in RankedItem.objects.filter(
            item_id=item, ranking__annotator__in=mine
        ).values_list("ranking__order", "position")
    ]
    assert labels[item]["rankings"] == len(places) >= 8
    assert labels[item]["label"] == pytest.approx(sum(places) / len(places))


def test_the_cards_yaml_names_the_license_configs_and_size(world, tmp_path):
    out = tmp_path / "release"
    export(world["snapshot"], out)
    meta, body = front_matter(out)
    assert meta["license"] == "cc-by-4.0"
    assert meta["size_categories"] == ["n<1K"]
    assert "text-ranking" in meta["task_categories"]
    assert [c["config_name"] for c in meta["configs"]] == list(CONFIGS)
    for config in meta["configs"]:
        assert {f["split"] for f in config["data_files"]} == {"train", "eval"}
        assert all((out / f["path"]).is_file() for f in config["data_files"])
    assert [c["config_name"] for c in meta["configs"] if c.get("default")] == ["rankings"]
    assert f"snapshot {world['snapshot'].pk}" in body and "## Citation" in body
    assert "Version 2 (en): rankings may be released; answers: Gender, Age band, Town" in body
    assert size_category(999) == "n<1K" and size_category(1000) == "1K<n<10K"
    assert size_category(123_456) == "100K<n<1M"


@says(
    "It holds an annotator's answers about themselves only for the questions their consent "
    "version lists, answers in their own words only where it allows them, and only in "
    "combinations that `STEREORANK_GROUP_K` or more released annotators share."
)
def test_no_combination_under_k_is_released_nor_named(world, tmp_path):
    out = tmp_path / "release"
    export(world["snapshot"], out)
    rankings = parquet_rows(out, "rankings")
    rows = [r for split in rankings.values() for r in split]
    combos = {(r["annotator"], r["gender"], r["age_band"]) for r in rows}
    shared = Counter((g, a) for _, g, a in combos if (g, a) != (None, None))
    assert shared and all(n >= K for n in shared.values()), shared
    assert ("woman", "25-34") not in shared  # "lone" alone: her answers dropped
    assert "town" not in rankings["train"][0]  # own words, not allowed: no column
    _, body = front_matter(out)
    everything = body + "".join(
        str(pq.read_table(p).to_pylist()) for p in out.glob("data/*/*.parquet")
    )
    assert "non-binary" not in everything and "Utrecht" not in everything
    for line in re.findall(r"^- (?:Gender|Age band): (.+)\.$", body, re.M):
        named = re.findall(r"(?:^|, )(.+?) \((\d+)\)", line)
        assert named
        for group, n in named:
            assert int(n) >= K
            assert int(n) == len({a for a, g, age in combos if group in (g, age)})
    assert "whose answers were all dropped (their combination was shared by fewer than k): 2" in (
        " ".join(body.split())
    )


def test_own_words_only_where_the_consent_allows_them(world, tmp_path):
    export(world["snapshot"], tmp_path / "default")
    ConsentText.objects.filter(version=2).update(release_free_text=True)
    export(world["snapshot"], tmp_path / "own-words")
    towns = [r.get("town") for r in parquet_rows(tmp_path / "own-words", "rankings")["train"]]
    assert "Utrecht" in towns  # three share it
    assert "town" not in parquet_rows(tmp_path / "default", "rankings")["train"][0]


def test_the_coarsening_drops_columns_then_rows():
    rows = {n: {"a": "x" if n < 4 else "y", "b": str(n % 2)} for n in range(8)}
    kept = coarsen(rows, ["a", "b"], 3)
    assert kept.columns == ("a",) and kept.dropped == ("b",) and kept.suppressed == 0
    one = coarsen({**rows, 9: {"a": "z", "b": "2"}}, ["a", "b"], 3)
    assert one.suppressed == 1 and one.rows[9] == {"a": None}
    with pytest.raises(ValueError):
        coarsen(rows, ["a"], 0)


@says(
    "It names annotators and tasks by keys made for that release alone, from a random key "
    "that is never stored, so two releases cannot be joined by them, nor a release with the "
    "exports."
)
def test_two_releases_pseudonyms_differ_from_each_other_and_from_the_exports(world, tmp_path):
    export(world["snapshot"], tmp_path / "one")
    export(world["snapshot"], tmp_path / "two")
    keys = {}
    for name in ("one", "two"):
        rows = [r for s in parquet_rows(tmp_path / name, "rankings").values() for r in s]
        keys[name] = ({r["annotator"] for r in rows}, {r["task"] for r in rows})
    assert len(keys["one"][0]) == len(keys["two"][0]) == 8
    assert not keys["one"][0] & keys["two"][0] and not keys["one"][1] & keys["two"][1]
    ours = {pseudonym(p.user_id) for p in world["people"].values()}
    assert not ours & keys["one"][0]


@says(
    "A release cannot be recalled: an erasure after publication cannot reach copies already "
    "downloaded."
)
def test_the_card_says_erasure_cannot_reach_downloaded_copies(world, tmp_path):
    out = tmp_path / "release"
    export(world["snapshot"], out)
    _, body = front_matter(out)
    assert "an erasure after publication cannot reach copies already downloaded" in body
    assert "An erased person's rows are never in a release" in body


def test_nothing_to_release_without_a_consent_that_allows_it(world, tmp_path):
    ConsentText.objects.update(release_rankings=False)
    with pytest.raises(CommandError, match="may be released") as refused:
        export(world["snapshot"], tmp_path / "none")
    assert "\n" not in str(refused.value) and not (tmp_path / "none").exists()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    ConsentText.objects.filter(version=2).update(release_rankings=True)
    with pytest.raises(CommandError, match="not an empty folder"):
        export(world["snapshot"], tmp_path / "full")


def test_without_the_extra_the_command_says_which_to_install(world, tmp_path, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "pyarrow", None)
    with pytest.raises(CommandError) as refused:
        export(world["snapshot"], tmp_path / "release")
    assert "pip install 'stereorank[release]'" in str(refused.value)
    assert "\n" not in str(refused.value) and not (tmp_path / "release").exists()


def test_the_push_makes_a_private_dataset_repository_with_every_file(world, tmp_path, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    with FakeHub(TOKEN) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        out = tmp_path / "release"
        printed = export(world["snapshot"], out, "--push", "lab/occupations")
        repo = hub.repos["lab/occupations"]
        assert repo["type"] == "dataset" and repo["visibility"] == "private"
        local = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*.*")}
        assert repo["files"] == local and len(local) == 9  # the card and 4 x 2 parquet files
        assert not hub.unknown
        assert "pushed to" in printed and "(private)" in printed and TOKEN not in printed
        with pytest.raises(CommandError, match="exists already") as refused:
            export(world["snapshot"], tmp_path / "again", "--push", "lab/occupations")
        assert TOKEN not in str(refused.value)
        export(world["snapshot"], tmp_path / "open", "--push", "lab/open", "--public")
        assert hub.repos["lab/open"]["visibility"] == "public"
        monkeypatch.setenv("HF_TOKEN", "hf_wrong")
        with pytest.raises(CommandError, match="401") as refused:
            export(world["snapshot"], tmp_path / "wrong", "--push", "lab/wrong")
        assert "hf_wrong" not in str(refused.value) and (tmp_path / "wrong").is_dir()
