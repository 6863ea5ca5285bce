"""Two collection studies and a validation study running at once: nothing of one reaches
another's tasks, consent, exports, quality report or snapshots; a snapshot records its
studies and refuses a validation study; group labels only for groups of k or more."""

import io
import json

import pytest
from django.core.management import CommandError, call_command
from training_study import make_study

from annotation.models import AnnotatorProfile, ConsentText, Item, Ranking, RankingTask, Study
from annotation.participants import consent
from annotation.quality.report import quality_report
from annotation.rankings.exports import pair_rows, ranking_rows
from annotation.rankings.labels import LabelRow, group_labels
from annotation.studies import lifecycle as studies
from training.errors import SnapshotError
from training.snapshots.services import create_snapshot, new_rankings_since

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@pytest.fixture
def three_studies(tmp_path):
    """The default study and ``wave-b`` (collection), ``val`` (validation), each with its
    own items, tasks and synthetic annotators who ranked them."""
    b = studies.create_study("wave-b", name="Wave B")
    val = studies.create_study("val", kind=Study.Kind.VALIDATION)
    for study in (b, val):
        consent.publish(study, consent.demonstration_values())
        studies.transition(study, Study.Status.OPEN)
    default = studies.default_study()
    for study, folder in ((default, "a"), (b, "b"), (val, "v")):
        (tmp_path / folder).mkdir()
        make_study(tmp_path / folder, occupations=4, annotators=3, study=study)
    return {"default": default, "wave-b": b, "val": val}


def _ids(study: Study) -> dict[str, set[int]]:
    return {
        "tasks": set(RankingTask.objects.filter(study=study).values_list("pk", flat=True)),
        "items": set(Item.objects.filter(study=study).values_list("pk", flat=True)),
        "rankings": set(Ranking.objects.filter(task__study=study).values_list("pk", flat=True)),
    }


def test_each_study_keeps_its_own_tasks_participants_and_consent(three_studies):
    for slug, study in three_studies.items():
        own = _ids(study)
        assert own["rankings"], slug
        for ranking in Ranking.objects.filter(pk__in=own["rankings"]).select_related(
            "annotator", "task"
        ):
            assert ranking.annotator.study_id == study.pk
            assert set(ranking.order) <= own["items"]
        texts = ConsentText.objects.filter(consents__annotator__study=study).distinct()
        assert {t.study_id for t in texts} == {study.pk}
    assert AnnotatorProfile.objects.filter(study=three_studies["val"]).count() == 3


def test_exports_and_the_quality_report_read_one_study(three_studies):
    for slug, study in three_studies.items():
        own = _ids(study)
        rows = list(ranking_rows(include_synthetic=True, study=study))
        assert {r["task"] for r in rows} <= own["tasks"] and len(rows) == len(own["rankings"])
        pairs = list(pair_rows(include_synthetic=True, study=study))
        assert pairs and {p["chosen_item"] for p in pairs} <= own["items"]
        report = quality_report(True, n_boot=0, study=study)
        assert report["study"] == slug and report["n_rankings"] == len(own["rankings"])
        names = {r["pseudonym"] for r in report["annotators"]}
        assert names == {r["annotator"] for r in rows}
    # Without a study: the default one, as before studies existed.
    default = _ids(three_studies["default"])
    assert {r["task"] for r in ranking_rows(include_synthetic=True)} <= default["tasks"]

    lines = run("export_rankings", "--study", "wave-b", "--include-synthetic").splitlines()
    assert {json.loads(line)["task"] for line in lines} <= _ids(three_studies["wave-b"])["tasks"]
    with pytest.raises(CommandError, match="^There is no study 'nope'.$"):
        run("export_pairs", "--study", "nope")
    report = json.loads(
        run("quality", "--study", "val", "--json", "--include-synthetic", "--n-boot", "0")
    )
    assert report["study"] == "val"


def test_snapshots_freeze_the_studies_they_name_and_record_them(three_studies):
    default, b, val = three_studies["default"], three_studies["wave-b"], three_studies["val"]
    only_b = create_snapshot(include_synthetic=True, studies=[b])
    assert {r["item_id"] for r in only_b.examples} <= _ids(b)["items"]
    assert list(only_b.studies.all()) == [b]
    assert only_b.ranking_count == len(_ids(b)["rankings"])

    plain = create_snapshot(include_synthetic=True)  # the default study, as before
    assert {r["item_id"] for r in plain.examples} <= _ids(default)["items"]
    assert list(plain.studies.all()) == [default]

    both = create_snapshot(include_synthetic=True, studies=[default, b])
    assert both.ranking_count == only_b.ranking_count + plain.ranking_count
    assert set(both.studies.all()) == {default, b}

    with pytest.raises(SnapshotError, match="'val' is a validation study"):
        create_snapshot(include_synthetic=True, studies=[b, val])
    with pytest.raises(CommandError, match="'val' is a validation study"):
        run("snapshot", "--study", "val", "--include-synthetic")
    made = run("snapshot", "--study", "default", "--study", "wave-b", "--include-synthetic")
    assert set(Study.objects.filter(snapshots=int(made)).values_list("slug", flat=True)) == {
        "default",
        "wave-b",
    }

    # New rankings in another study are not new for this snapshot.
    assert new_rankings_since(only_b, include_synthetic=True) == 0


def test_a_group_of_fewer_than_k_annotators_keeps_no_labels():
    rows = [
        LabelRow(1, 10, 0, {"age": "18-24"}, annotator=1),
        LabelRow(1, 11, 1, {"age": "18-24"}, annotator=1),
        LabelRow(2, 10, 1, {"age": "25-34"}, annotator=2),
        LabelRow(2, 11, 0, {"age": "25-34"}, annotator=2),
        LabelRow(3, 10, 0, {"age": "25-34"}, annotator=3),
        LabelRow(3, 11, 1, {"age": "25-34"}, annotator=3),
    ]
    assert set(group_labels(rows, ["age"], k=1)["age"]) == {"18-24", "25-34"}
    kept = group_labels(rows, ["age"], k=2)["age"]
    assert set(kept) == {"25-34"}  # the group of one keeps nothing
    assert kept["25-34"] == {10: 0.5, 11: 0.5}


def test_a_snapshot_keeps_group_labels_for_groups_of_k_or_more_only(three_studies, settings):
    settings.STEREORANK = {**settings.STEREORANK, "GROUP_K": 2}
    b = three_studies["wave-b"]
    # One annotator of wave-b answers a group no one else is in.
    lone = AnnotatorProfile.objects.filter(study=b).order_by("pk").first()
    lone.demographics = {**lone.demographics, "age_band": "lone-group"}
    lone.save(update_fields=["demographics"])
    snap = create_snapshot(include_synthetic=True, studies=[b])
    assert snap.group_k == 2
    assert "lone-group" not in snap.group_labels.get("age_band", {})
    settings.STEREORANK = {**settings.STEREORANK, "GROUP_K": 1}
    every = create_snapshot(include_synthetic=True, studies=[b])
    assert "lone-group" in every.group_labels["age_band"]  # k=1: the lone answer is kept


@pytest.mark.django_db(transaction=True)
def test_the_migration_drops_old_snapshots_groups_under_k(
    make_tasks, annotator, store_ranking, settings
):
    """A snapshot frozen before the k rule: a group whose only member was erased (no
    rankings left) loses its labels; a group of k stays; the default study is recorded."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    settings.STEREORANK = {**settings.STEREORANK, "GROUP_K": 2}
    task = make_tasks(1, 2, overlap=5)[0]
    items = list(task.items.values_list("pk", flat=True))
    for name in ("a", "b"):
        profile = annotator(name).profile
        profile.demographics = {"age_band": "25-34"}
        profile.save(update_fields=["demographics"])
        store_ranking(profile, task, items)
    executor = MigrationExecutor(connection)
    target = executor.loader.graph.node_map[("training", "0012_snapshot_studies")]
    before = sorted(parent.key for parent in target.parents if parent.key[0] == "training")
    executor.migrate(before)
    old = executor.loader.project_state(before).apps.get_model("training", "DatasetSnapshot")
    labels = {"item-1": 0.0}
    snap = old.objects.create(
        ranking_count=2,
        last_ranking_id=Ranking.objects.latest("pk").pk,
        content_hash="x",
        example_count=0,
        train_count=0,
        eval_count=0,
        examples=[],
        group_labels={"age_band": {"18-24": labels, "25-34": labels}},
    )
    MigrationExecutor(connection).migrate(executor.loader.graph.leaf_nodes())

    from training.models import DatasetSnapshot

    migrated = DatasetSnapshot.objects.get(pk=snap.pk)
    assert migrated.group_labels == {"age_band": {"25-34": labels}}
    assert migrated.group_k == 2
    assert [s.slug for s in migrated.studies.all()] == ["default"]


def test_a_schedule_counts_and_snapshots_its_own_studies_only(three_studies):
    from training.models import RetrainDecision
    from training.schedule_settings import ScheduleSettings
    from training.schedules import scheduled_step

    default, b = three_studies["default"], three_studies["wave-b"]
    n_default, n_b = len(_ids(default)["rankings"]), len(_ids(b)["rankings"])
    create_snapshot(include_synthetic=True, studies=[b])  # the newest snapshot: wave-b's

    def reason(**kwargs) -> str:
        settings = ScheduleSettings.from_kwargs(
            {"min_new_rankings": 10**6, "include_synthetic": True, **kwargs}
        )
        (decision,) = scheduled_step("s", settings)
        assert decision.decision == RetrainDecision.objects.get(pk=decision.pk).decision
        return decision.reason

    # The default study's rankings are all new: wave-b's snapshot froze none of them.
    assert reason() == f"only {n_default} new rankings, need 1000000"
    assert reason(studies=["wave-b"]) == "only 0 new rankings, need 1000000"
    assert (
        reason(studies=["default", "wave-b"])
        == f"only {n_default + n_b} new rankings, need 1000000"
    )
    create_snapshot(include_synthetic=True)  # the default study's
    assert reason() == "only 0 new rankings, need 1000000"
    # A validation study's rankings never count: a schedule naming one skips, saying why.
    assert "val is a validation study" in reason(studies=["val"])
    assert "no study 'nope'" in reason(studies=["nope"])
    with pytest.raises(Exception, match="studies must be a list of study slugs"):
        ScheduleSettings.from_kwargs({"studies": "wave-b"})
