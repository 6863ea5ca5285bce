"""Rankings imported from Label Studio, Argilla and Potato (issue 42, part 3).

The fixtures (tests/annotation/fixtures/imports/) follow each tool's documented export shape:

- Label Studio: the JSON export of tasks with ``data`` and ``annotations`` (labelstud.io
  /guide/export and /guide/task_format); a Ranker result ``"value": {"ranker": {"rank":
  [ids]}}`` over a ``List`` of ``{"id", "title", "body"}`` items (labelstud.io/tags/ranker,
  and the Ranker tag's own examples in ``web/libs/editor/src/tags/control/Ranker.jsx``); a
  Pairwise result ``"value": {"selected": "left"}`` (labelstud.io/tags/pairwise, ``Pairwise.js``
  and the pairwise template's ``$text1``/``$text2``).
- Argilla 2.x: ``dataset.records.to_json`` (docs.argilla.io, "Importing and exporting datasets
  and records"), each record as ``Record.to_dict`` writes it (``argilla/records/_resource.py``:
  ``responses`` maps a question to ``[{"value", "user_id"}]``); a RankingQuestion's value as
  the SDK gives it (a list of options, ``argilla/responses.py``) or as the API does
  (``[{"value", "rank"}]``, ties sharing a rank).
- Potato: one JSON line per annotator and instance (``python -m potato.export --format
  jsonl``: ``instance_id``, ``user_id``, ``labels``; the annotated-instances output's
  ``label_annotations``); a ranking scheme's ``{"rank_order": "B,D=A,C"}``
  (docs/annotation-types/comparison/ranking.md) and a bws scheme's ``{"best": "B", "worst":
  "D"}`` over the tuple's ``_bws_items`` (docs/annotation-types/comparison/bws.md,
  ``potato/bws.py``'s tuple generator).
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.http import HttpRequest
from django.test import Client
from django.urls import reverse
from privacy_claims import says
from staff import make_staff

from annotation.errors import ConsentRequired
from annotation.imports import argilla, label_studio, potato
from annotation.imports.models import ImportBatch, ImportedAnnotator, ImportSource
from annotation.imports.services import source_hash
from annotation.models import (
    AnnotatorProfile,
    Erasure,
    Item,
    Occupation,
    Prompt,
    PromptType,
    Ranking,
    RankingTask,
    Study,
    TaskItem,
)
from annotation.participants.erasure import erase_annotator
from annotation.rankings import selectors
from annotation.rankings.label_sql import aggregated_labels
from annotation.rankings.labels import item_labels
from annotation.stats.tiers import of_ranking
from tests.readme_blocks import README, blocks

FIXTURES = Path(__file__).parent / "fixtures" / "imports"
PROMPTS = [
    "A nurse at work",
    "A nurse in scrubs",
    "A nurse, an older man",
    "A nurse on a night shift",
]
SOURCE = "Lab X, project 7"
BASIS = "Lab X's consent v3 (ethics ref. LX-12) covers reuse for stereotype research"

# Per fixture: the tool, and by hand from the file: {(source annotator, items): tiers},
# items by their number (1-4: nurse-1.png / PROMPTS[0] ...), and the answers skipped.
EXPECTED = {
    "label_studio_ranker.json": (
        "label-studio",
        {
            ("11", (1, 2, 3)): ((2,), (3,), (1,)),
            ("12", (1, 2, 3)): ((1,), (3,), (2,)),
            ("11", (1, 3, 4)): ((3,), (4,), (1,)),
        },
        1,  # the cancelled annotation
    ),
    "label_studio_pairwise.json": (
        "label-studio",
        {
            ("11", (2, 4)): ((4,), (2,)),
            ("12", (2, 4)): ((2,), (4,)),
            ("12", (1, 3)): ((1,), (3,)),
        },
        0,
    ),
    "argilla_records.json": (
        "argilla",
        {
            ("0b8e2f6a-7d1c-4a55-9e0f-1c2d3e4f5a60", (1, 2, 4)): ((4,), (1,), (2,)),
            ("5c7d9e1f-2a3b-4c5d-8e9f-a0b1c2d3e4f5", (1, 3)): ((1, 3),),
            ("e3f4a5b6-c7d8-4e9f-a0b1-c2d3e4f5a6b7", (2, 3, 4)): ((2,), (3, 4)),
        },
        1,  # the draft response
    ),
    "potato_ranking.jsonl": (
        "potato",
        {("ann_a", (1, 2, 3)): ((2,), (1,), (3,)), ("ann_b", (1, 2, 3)): ((1, 2), (3,))},
        0,
    ),
    "potato_bws.jsonl": (
        "potato",
        {
            ("ann_a", (1, 2, 3, 4)): ((3,), (2, 4), (1,)),
            ("ann_c", (1, 2, 3, 4)): ((1,), (2, 3), (4,)),
        },
        0,
    ),
}


@pytest.fixture
def study(db):
    """A study of four nurse items (images items/nurse-N.png, prompts ``PROMPTS``) and its
    owner, ``owner``; ``study.items_by_number``: {N: item id}."""
    found = Study.objects.create(slug="imported", name="Imported", platform="generic")
    occupation, _ = Occupation.objects.get_or_create(name="nurse", slug="nurse")
    original, _ = Prompt.objects.get_or_create(
        occupation=occupation,
        prompt_type=PromptType.NEUTRAL,
        origin=None,
        defaults={"text": "A photo of a nurse"},
    )
    found.items_by_number = {}
    for n, text in enumerate(PROMPTS, start=1):
        prompt = Prompt.objects.create(
            occupation=occupation, prompt_type=PromptType.NEUTRAL, text=text, origin=original
        )
        item = Item.objects.create(
            study=found, prompt=prompt, image=f"items/nurse-{n}.png", image_sha256=f"nurse-{n}"
        )
        found.items_by_number[n] = item.pk
    make_staff("owner", found)
    return found


def run(*argv: str) -> str:
    out = io.StringIO()
    call_command("import_annotations", *argv, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def import_fixture(name: str, path: Path | None = None, basis: str | None = None) -> str:
    argv = [str(path or FIXTURES / name), "--from", EXPECTED[name][0], "--study", "imported"]
    argv += ["--source", SOURCE, "--owner", "owner"]
    return run(*argv, *(["--basis", basis] if basis else []))


def stored(study: Study) -> dict:
    """{(source annotator's hash, sorted item numbers): tiers as item numbers}."""
    number = {pk: n for n, pk in study.items_by_number.items()}
    out = {}
    for ranking in Ranking.objects.filter(task__study=study).select_related("annotator__imported"):
        tiers = of_ranking(ranking.order, ranking.tiers)
        items = tuple(sorted(number[i] for t in tiers for i in t))
        out[(ranking.annotator.imported.source_hash, items)] = tuple(
            tuple(number[i] for i in t) for t in tiers
        )
    return out


def hashed(tool: str, expected: dict) -> dict:
    return {(source_hash(tool, SOURCE, who), items): t for (who, items), t in expected.items()}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_tool_imports_its_fixture_as_the_expected_tiers(study, name):
    tool, expected, skipped = EXPECTED[name]
    out = import_fixture(name)
    assert stored(study) == hashed(tool, expected)
    batch = ImportBatch.objects.get(study=study)
    people = {who for who, _ in expected}
    counts = (batch.rankings, batch.annotators, batch.skipped)
    assert counts == (len(expected), len(people), skipped)
    assert batch.tasks == len({items for _, items in expected}) == RankingTask.objects.count()
    assert f"{len(expected)} rankings by {len(people)} new annotators" in out
    for task in RankingTask.objects.all():  # full: imported rankings open no slot of ours
        assert (task.is_gold, task.check_item_id) == (False, None)
        assert task.ranking_count == task.overlap == task.rankings.count()
    assert "No basis recorded" in out


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_second_import_of_the_same_file_adds_nothing_and_says_so(study, name):
    import_fixture(name)
    rankings, users = Ranking.objects.count(), AnnotatorProfile.objects.count()
    again = import_fixture(name)
    assert "was imported into imported already" in again and "nothing added" in again
    assert (Ranking.objects.count(), AnnotatorProfile.objects.count()) == (rankings, users)
    assert ImportBatch.objects.count() == 1


def test_a_new_export_with_more_answers_adds_only_the_new_ones(study, tmp_path):
    """Another file (a later export of the same project): the same people are found again
    by their hashed ids, and an (annotator, task) pair ranked already keeps its ranking."""
    import_fixture("label_studio_ranker.json")
    tasks = json.loads((FIXTURES / "label_studio_ranker.json").read_text())
    tasks[1]["annotations"].append(
        {"completed_by": 12, "result": [_ranker(["a", "b", "c"])]}  # new: 12 on task 102
    )
    tasks[0]["annotations"][0]["result"] = [_ranker(["n1", "n2", "n3"])]  # 11 changed their mind
    later = tmp_path / "later.json"
    later.write_text(json.dumps(tasks))
    out = import_fixture("label_studio_ranker.json", later)
    assert "1 rankings by 0 new annotators, 0 new tasks, 4 answers skipped" in out  # 1 cancelled
    expected = dict(EXPECTED["label_studio_ranker.json"][1])
    expected[("12", (1, 3, 4))] = ((4,), (1,), (3,))
    assert stored(study) == hashed("label-studio", expected)


def _ranker(order: list[str]) -> dict:
    return {
        "type": "ranker",
        "from_name": "rank",
        "to_name": "results",
        "value": {"ranker": {"rank": order}},
    }


def _malformed_label_studio(path: Path) -> str:
    tasks = json.loads((FIXTURES / "label_studio_ranker.json").read_text())
    tasks[1]["annotations"][0]["result"] = [_ranker(["c", "a", "zz"])]
    path.write_text(json.dumps(tasks))
    return "JSON array index 1, annotation 0: ranker['rank'] names 'zz', not an item of the task"


def _malformed_argilla(path: Path) -> str:
    records = json.loads((FIXTURES / "argilla_records.json").read_text())
    records[2]["responses"]["ranking"][0]["value"][1]["rank"] = "second"
    path.write_text(json.dumps(records))
    return "JSON array index 2, response 0: {'value': 'card-2', 'rank': 'second'} is not an option"


def _malformed_potato(path: Path) -> str:
    lines = (FIXTURES / "potato_bws.jsonl").read_text().splitlines()
    lines[1] = lines[1].replace('"worst": "D"', '"worst": "A"')
    path.write_text("\n".join(lines) + "\n")
    return "JSONL line 2: the best and the worst item are the same"


def _truncated_potato(path: Path) -> str:
    lines = (FIXTURES / "potato_ranking.jsonl").read_text().splitlines()
    path.write_text(lines[0] + "\n" + lines[1][:40] + "\n")
    return "JSONL line 2: not JSON"


@pytest.mark.parametrize(
    "name, spoil",
    [
        ("label_studio_ranker.json", _malformed_label_studio),
        ("argilla_records.json", _malformed_argilla),
        ("potato_bws.jsonl", _malformed_potato),
        ("potato_ranking.jsonl", _truncated_potato),
    ],
)
def test_a_malformed_record_is_named_by_its_position_and_nothing_is_written(
    study, tmp_path, name, spoil
):
    path = tmp_path / name
    message = spoil(path)
    with pytest.raises(CommandError) as refused:
        import_fixture(name, path, basis=BASIS)
    assert str(refused.value).startswith(message) and "\n" not in str(refused.value)
    assert not Ranking.objects.exists() and not RankingTask.objects.exists()
    assert not ImportBatch.objects.exists() and not ImportSource.objects.exists()
    assert AnnotatorProfile.objects.count() == 0


def test_an_unknown_item_is_refused_naming_the_record(study, tmp_path):
    tasks = json.loads((FIXTURES / "label_studio_pairwise.json").read_text())
    tasks[1]["data"]["image2"] = "https://lab.example/images/doctor-9.png"
    path = tmp_path / "unknown.json"
    path.write_text(json.dumps(tasks))
    with pytest.raises(
        CommandError,
        match=r"^JSON array index 1, annotation 0: item 'right' "
        r"\('https://lab.example/images/doctor-9.png'\) matches no item of study "
        r"imported by id, image name or prompt text$",
    ):
        import_fixture("label_studio_pairwise.json", path)
    assert not Ranking.objects.exists() and not ImportBatch.objects.exists()


def test_a_name_that_matches_two_items_is_refused(study, tmp_path):
    first = Item.objects.get(pk=study.items_by_number[1])
    Item.objects.create(study=study, prompt=first.prompt, image="items/other.png", image_sha256="x")
    path = tmp_path / "ambiguous.jsonl"
    answer = {"rank_order": "A nurse at work,nurse-2.png"}
    path.write_text(json.dumps({"user_id": "u", "labels": {"r": answer}}) + "\n")
    with pytest.raises(
        CommandError,
        match=r"^JSONL line 1: item 'A nurse at work' .* matches 2 "
        "items of study imported by prompt text",
    ):
        import_fixture("potato_ranking.jsonl", path)


def test_our_item_ids_in_the_export_come_first_and_an_existing_task_is_reused(study, tmp_path):
    """``stereorank_items`` names our ids (here against the names the file gives); the study's
    task with exactly those items takes the ranking in its open slot."""
    ids = study.items_by_number
    task = RankingTask.objects.create(study=study, occupation=Occupation.objects.get(), overlap=2)
    TaskItem.objects.bulk_create(TaskItem(task=task, item_id=ids[n]) for n in (1, 4))
    line = {
        "user_id": "u1",
        "labels": {"r": {"rank_order": "x,y"}},
        "stereorank_items": {"x": ids[4], "y": ids[1]},
    }
    path = tmp_path / "ours.jsonl"
    path.write_text(json.dumps(line) + "\n")
    assert "0 new tasks" in import_fixture("potato_ranking.jsonl", path)
    ranking = Ranking.objects.get()
    assert (ranking.task_id, ranking.order, ranking.tiers) == (task.pk, [ids[4], ids[1]], None)
    task.refresh_from_db()
    assert (task.ranking_count, task.overlap) == (1, 2)
    line["stereorank_items"]["x"] = 999_999
    path.write_text(json.dumps(line) + "\n")
    with pytest.raises(CommandError, match="item 'x': study imported has no item 999999"):
        import_fixture("potato_ranking.jsonl", path)


def counted(study) -> int:
    return selectors.counted_rankings(studies=[study]).count()


def test_imported_rankings_count_exactly_while_the_basis_stands(study):
    import_fixture("label_studio_ranker.json")
    assert counted(study) == 0
    left = selectors.left_out_rankings(False, None, studies=[study])
    assert {r["reason"] for r in left} == {selectors.NO_IMPORT_BASIS}
    assert sum(r["rankings"] for r in left) == 3
    assert not selectors.active_annotators().filter(study=study).exists()

    args = ["--from", "label-studio", "--study", "imported", "--source", SOURCE, "--owner", "owner"]
    out = run(*args, "--basis", BASIS)
    assert "recorded by owner" in out and "its rankings count" in out
    assert counted(study) == 3 and selectors.active_annotators().filter(study=study).count() == 2
    assert selectors.left_out_rankings(False, None, studies=[study]) == []
    source = ImportSource.objects.get()
    assert (source.basis, source.basis_by.username) == (BASIS, "owner")

    assert "no longer count" in run(*args, "--withdraw-basis")
    assert counted(study) == 0
    with pytest.raises(CommandError, match="was withdrawn on .*: nothing more of it is imported"):
        import_fixture("label_studio_pairwise.json")  # another file of the source: refused
    assert Ranking.objects.count() == 3  # kept, as a withdrawn consent's rankings are


@pytest.mark.postgres
def test_the_labels_read_imported_rankings_only_with_a_basis(study):
    """By hand, from label_studio_ranker.json: a ranking of 3 gives places 0, 1/2, 1; item 1
    is last, first, last (2/3), item 2 first, last (1/2), item 3 middle, middle, first
    (1/3), item 4 middle (1/2). PostgreSQL's labels and the Python path's agree."""
    import_fixture("label_studio_ranker.json")
    assert aggregated_labels(False, [], studies=[study]).labels == {}
    import_fixture("label_studio_ranker.json", basis=BASIS)  # the same file: records the basis
    n = study.items_by_number
    expected = {n[1]: 2 / 3, n[2]: 1 / 2, n[3]: 1 / 3, n[4]: 1 / 2}
    got = aggregated_labels(False, [], studies=[study])
    assert got.labels == pytest.approx(expected) and got.ranking_count == 3
    assert item_labels(selectors.label_rows(studies=[study])) == pytest.approx(expected)


def test_imported_annotators_cannot_log_in_nor_get_a_task(study):
    from annotation.assignment.next_task import next_task

    import_fixture("argilla_records.json", basis=BASIS)
    for profile in AnnotatorProfile.objects.filter(study=study):
        user = profile.user
        assert not user.is_active and not user.has_usable_password()
        assert user.username.startswith("i-")
        with pytest.raises(ConsentRequired):
            next_task(profile)
        client = Client()
        assert not client.login(request=HttpRequest(), username=user.username, password="")
        client.force_login(user)
        assert client.get(reverse("portal:home")).status_code == 302  # no page: to the log-in


@says(
    "Rankings imported from Label Studio, Argilla or Potato are kept under a profile made for "
    "each person, whose account cannot log in, with the source's id for them only as "
    "HMAC-SHA256 under `STEREORANK_EXTERNAL_ID_KEY`, and they count only while an owner's "
    "statement that the source study's consent covers this use is recorded and not withdrawn.",
    "For a person whose rankings were imported, it also blanks the hash of their id in the source.",
)
def test_an_import_keeps_a_keyed_hash_and_an_erasure_removes_the_rankings(study, settings):
    import_fixture("label_studio_ranker.json")
    assert counted(study) == 0  # no statement recorded yet
    import_fixture("label_studio_ranker.json", basis=BASIS)
    assert counted(study) == 3
    key = settings.STEREORANK["EXTERNAL_ID_KEY"].encode()
    keyed = hmac.new(key, f"import:label-studio:{SOURCE}:11".encode(), hashlib.sha256)
    link = ImportedAnnotator.objects.get(source_hash=keyed.hexdigest())
    profile = link.profile
    assert not profile.user.is_active and not profile.user.has_usable_password()
    kept = json.dumps(list(ImportedAnnotator.objects.values())) + profile.user.username
    assert "reviewer@lab.example" not in kept and '"11"' not in kept
    assert profile.rankings.count() == 2
    erasure = erase_annotator(profile, via=Erasure.Via.STAFF)
    assert erasure.rankings_removed == 2 and not profile.rankings.exists()
    link.refresh_from_db()
    assert link.source_hash == "" and counted(study) == 1
    assert sum(t.ranking_count for t in RankingTask.objects.all()) == 1


def test_only_an_owner_imports_and_states_the_basis(study):
    make_staff("researcher", study, role="researcher")
    argv = [str(FIXTURES / "potato_bws.jsonl"), "--from", "potato", "--study", "imported"]
    with pytest.raises(CommandError, match="^researcher is not an owner of study imported.$"):
        run(*argv, "--source", SOURCE, "--owner", "researcher", "--basis", BASIS)
    assert not ImportSource.objects.exists()


def test_the_parsers_read_buckets_and_ask_which_question_when_a_record_answers_two():
    task = {
        "data": {"items": [{"id": "a"}, {"id": "b"}, {"id": "c"}]},
        "annotations": [
            {
                "completed_by": 1,
                "result": [
                    {
                        "type": "ranker",
                        "from_name": "rank",
                        "value": {"ranker": {"most": ["c"], "rest": ["a", "b"], "_": []}},
                    }
                ],
            }
        ],
    }
    (ranking,) = label_studio.parse(json.dumps([task]).encode()).rankings
    assert ranking.tiers == (("c",), ("a", "b")) and ranking.question == "rank_ties"
    task["annotations"][0]["result"].append(_ranker(["a", "b", "c"]))
    with pytest.raises(ValueError, match="several ranking results \\(rank\\): name one"):
        label_studio.parse(json.dumps([task]).encode())
    record = {
        "fields": {"x": "p", "y": "q"},
        "responses": {
            "first": [{"value": ["x", "y"], "user_id": "u"}],
            "second": [{"value": ["y", "x"], "user_id": "u"}],
        },
    }
    with pytest.raises(ValueError, match="several ranking questions \\(first, second\\)"):
        argilla.parse(json.dumps([record]).encode())
    (named,) = argilla.parse(json.dumps([record]).encode(), question="second").rankings
    assert named.tiers == (("y",), ("x",)) and named.question == "pairwise"
    assert potato.parse(b'{"user_id": "u", "labels": {"note": {"text": "hi"}}}\n').skipped == 1


def test_the_readme_block_runs_as_written(db, media_root, tmp_path, monkeypatch):
    """The README's import block, on a database with its owner, as the README test runs it."""
    from django.contrib.auth import get_user_model

    get_user_model().objects.create_superuser("admin", password="pw-123456")
    monkeypatch.chdir(tmp_path)
    (block,) = [b for b in blocks() if "import_annotations" in b.text]
    outputs = []
    for step in block.steps:
        if step[0] == "file":
            Path(step[1]).write_text(step[2])
            continue
        out = io.StringIO()
        call_command(*step[1], stdout=out, stderr=io.StringIO())
        outputs.append(out.getvalue())
    imports = [o for o in outputs if "label-studio.json" in o]
    assert "2 rankings by 2 new annotators, 1 new tasks" in imports[0]
    assert "its rankings count" in imports[0] and "nothing added" in imports[1]
    lab_x = Study.objects.get(slug="lab-x")
    assert selectors.counted_rankings(studies=[lab_x]).count() == 2
    assert "import_annotations" in README.read_text()
