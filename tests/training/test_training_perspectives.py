"""Perspective reports on the test database: what they read, what they store, when.

The measures themselves are checked against scipy in tests/ml/test_ml_alignment.py;
here a group's stored figures are recomputed independently from the database rows
(positions from ``RankedItem``, scores from the in-memory head, W1 from scipy).
"""

from collections import defaultdict

import numpy as np
import pytest
from scipy import stats
from training_study import FAST, make_perspective_study, register_head

from annotation.models import AnnotatorProfile, Item, RankedItem
from annotation.participants import services as annotation_services
from tests.queued import queued
from training import selectors
from training.errors import PerspectiveError, PerspectivesPending, UnknownField
from training.ml.alignment import plackett_luce_position_marginals
from training.models import PerspectiveReport, PerspectiveSummary
from training.perspectives import services as perspectives
from training.runs.services import execute_run, start_run
from training.snapshots.services import EVAL, create_snapshot

pytestmark = [pytest.mark.slow]
K = 5


@pytest.fixture
def study(db, tmp_path, settings):
    settings.STEREORANK = {**settings.STEREORANK, "GROUP_K": K}
    return make_perspective_study(tmp_path)


@pytest.fixture
def snapshot(study):
    return create_snapshot(include_synthetic=True)


def _independent(snapshot, model, band: str) -> dict:
    """A group's alignment, Spearman and counts, from the database rows and scipy."""
    eval_prompts = {r["group"] for r in snapshot.examples if r["split"] == EVAL}
    members = {
        p.pk for p in AnnotatorProfile.objects.all() if p.demographics.get("age_band") == band
    }
    rankings = defaultdict(list)
    annotator_of = {}
    for rid, item, pos, who in RankedItem.objects.filter(
        ranking__annotator__in=members, ranking_id__lte=snapshot.last_ranking_id
    ).values_list("ranking_id", "item_id", "position", "ranking__annotator_id"):
        rankings[rid].append((pos, item))
        annotator_of[rid] = who
    items = Item.objects.select_related("prompt")
    prompt = {i.pk: f"prompt-{i.prompt.origin_id or i.prompt.pk}" for i in items}
    text = {i.pk: i.prompt.text for i in items}
    ids = sorted(text)
    score = dict(zip(ids, model.score([text[i] for i in ids]).tolist(), strict=True))
    human, machine = defaultdict(lambda: np.zeros(6)), defaultdict(lambda: np.zeros(6))
    used = set()
    for rid, placed in rankings.items():
        order = [item for _, item in sorted(placed)]
        marginals = plackett_luce_position_marginals([score[i] for i in order], 0.5)
        for pos, item in enumerate(order):
            if prompt[item] in eval_prompts:
                human[prompt[item]][pos] += 1
                machine[prompt[item]] += marginals[pos]
                used.add(rid)
    positions = np.arange(6)
    per_prompt = [
        1 - stats.wasserstein_distance(positions, positions, human[u], machine[u]) / 5
        for u in human
    ]
    labels = defaultdict(list)
    for placed in rankings.values():
        for pos, item in placed:
            if prompt[item] in eval_prompts:
                labels[item].append(pos / 5)
    eval_items = sorted(labels)
    rho = stats.spearmanr([score[i] for i in eval_items], [np.mean(labels[i]) for i in eval_items])
    return {
        "alignment": float(np.mean(per_prompt)),
        "spearman": float(rho.statistic),
        "n_rankings": len(used),
        "n_annotators": len({annotator_of[r] for r in used}),
        "n_prompts": len(human),
    }


def test_a_report_is_stored_per_group_and_matches_an_independent_computation(snapshot):
    checkpoint, model = register_head(snapshot, seed=3)
    (summary,) = perspectives.compute_reports(checkpoint, fields=["age_band"], n_boot=200)
    assert (summary.field, summary.k, summary.temperature) == ("age_band", K, 0.5)
    assert summary.n_rankings == len(selectors.snapshot_rankings(snapshot))
    rows = {r.group: r for r in PerspectiveReport.objects.filter(checkpoint=checkpoint)}
    assert set(rows) == {"18-24", "25-34"}  # "prefer not to say" forms no group
    expected = {band: _independent(snapshot, model, band) for band in rows}
    # the fixture gives one group of k or more and one under k
    assert expected["18-24"]["n_annotators"] >= K > expected["25-34"]["n_annotators"]
    big, small = rows["18-24"], rows["25-34"]
    assert big.status == PerspectiveReport.Status.COMPUTED
    figures = big.figures
    for key in ("alignment", "spearman"):
        assert figures[key] == pytest.approx(expected["18-24"][key], abs=1e-5)
    for key in ("n_rankings", "n_annotators", "n_prompts"):
        assert figures[key] == expected["18-24"][key]
    assert big.alignment == figures["alignment"]
    low, high = figures["alignment_ci"]
    assert low <= figures["alignment"] <= high
    assert len(figures["per_prompt"]) == figures["n_prompts"]
    # under k: the name only, no figure and no count
    assert (small.status, small.alignment, small.figures) == ("fewer_than_k", None, {})


def test_stored_reports_are_reused_never_recomputed(snapshot, monkeypatch):
    checkpoint, _ = register_head(snapshot, seed=1)
    perspectives.compute_reports(checkpoint, fields=["age_band"], n_boot=50)
    stored = list(PerspectiveReport.objects.values_list("id", "figures"))

    def no_scoring(*args):
        raise AssertionError("scored again")

    monkeypatch.setattr(perspectives, "load_model", no_scoring)
    again = perspectives.compute_reports(checkpoint, fields=["age_band"], n_boot=50)
    assert [s.field for s in again] == ["age_band"]
    assert list(PerspectiveReport.objects.values_list("id", "figures")) == stored
    with pytest.raises(AssertionError, match="scored again"):  # a new field is computed
        perspectives.compute_reports(checkpoint, fields=["gender_identity"])


def test_withdrawals_leave_stored_reports_alone_and_leave_later_ones(snapshot):
    first, _ = register_head(snapshot, seed=1)
    second, _ = register_head(snapshot, seed=2)
    perspectives.compute_reports(first, fields=["age_band"], n_boot=0)
    before = PerspectiveReport.objects.get(checkpoint=first, group="18-24").figures
    eval_items = {r["item_id"] for r in snapshot.examples if r["split"] == EVAL}
    leaving = (
        AnnotatorProfile.objects.filter(
            demographics__age_band="18-24", rankings__positions__item__in=eval_items
        )
        .distinct()
        .first()
    )
    annotation_services.withdraw_consent(leaving)
    gone = leaving.rankings.count()
    assert gone > 0
    perspectives.compute_reports(second, fields=["age_band"], n_boot=0)
    assert PerspectiveReport.objects.get(checkpoint=first, group="18-24").figures == before
    n_first, n_second = (
        PerspectiveSummary.objects.get(checkpoint=c).n_rankings for c in (first, second)
    )
    assert n_first - n_second == gone
    later = PerspectiveReport.objects.get(checkpoint=second, group="18-24").figures
    assert later["n_annotators"] < before["n_annotators"]
    assert later["n_rankings"] < before["n_rankings"]


def test_rankings_after_the_snapshot_are_not_read(snapshot, study):
    taken = {r[0] for r in selectors.snapshot_rankings(snapshot)}
    assert max(taken) == snapshot.last_ranking_id and len(taken) == snapshot.ranking_count
    from annotation.studies.simulation import simulate

    simulate(2, 2, seed=9)  # new annotators rank after the snapshot
    assert {r[0] for r in selectors.snapshot_rankings(snapshot)} == taken


def test_bad_requests_are_refused(snapshot):
    checkpoint, _ = register_head(snapshot)
    with pytest.raises(UnknownField, match="no demographic field 'shoe_size'"):
        perspectives.compute_reports(checkpoint, fields=["shoe_size"])
    checkpoint.snapshot = None
    with pytest.raises(PerspectiveError, match="has no snapshot of its own"):
        perspectives.compute_reports(checkpoint)
    other, _ = register_head(snapshot, seed=5)
    with pytest.raises(PerspectivesPending, match="no age_band report of v1 and v2"):
        perspectives.compare_versions(checkpoint, other, snapshot, "age_band")


def test_version_against_version_pairs_by_prompt(snapshot):
    a, _ = register_head(snapshot, seed=1)
    b, _ = register_head(snapshot, seed=2)
    for checkpoint in (a, b):
        perspectives.compute_reports(checkpoint, fields=["age_band"], n_boot=0)
    rows = perspectives.compare_versions(a, b, snapshot, "age_band", n_boot=500)
    assert PerspectiveReport.objects.get(checkpoint=a, group="25-34").status == "fewer_than_k"
    assert [r["group"] for r in rows] == ["18-24"]  # a group under k is not compared
    for row in rows:
        fa, fb = (
            PerspectiveReport.objects.get(checkpoint=c, group=row["group"]).figures for c in (a, b)
        )
        shared = sorted(set(fa["per_prompt"]) & set(fb["per_prompt"]))
        diffs = [fa["per_prompt"][u] - fb["per_prompt"][u] for u in shared]
        assert row["diff"] == pytest.approx(np.mean(diffs), abs=1e-12)
        assert row["n_prompts"] == len(shared)
        low, high = row["ci"]
        expected = "gained" if low > 0 else "lost" if high < 0 else "no clear change"
        assert row["verdict"] == expected
    same = perspectives.compare_versions(a, a, snapshot, "age_band", n_boot=50)
    assert all(r["diff"] == 0 and r["verdict"] == "no clear change" for r in same)


def test_a_new_checkpoint_queues_its_report_on_its_own_snapshot(
    snapshot, django_capture_on_commit_callbacks
):
    run = start_run(snapshot, hyperparameters={**FAST, "epochs": 1}, enqueue=False)
    with django_capture_on_commit_callbacks() as callbacks:
        assert execute_run(run.pk, "node-a") == "done: v1"
    checkpoint = run.checkpoint
    assert queued(callbacks) == [
        ("training.tasks.perspective_report", (checkpoint.pk, snapshot.pk, None))
    ]
    from training.tasks import perspective_report
    from web.celery import app

    route = app.amqp.router.route({}, "training.tasks.perspective_report")
    assert route["queue"].name == "default"  # off the solo gpu queue: it never blocks training
    fields = perspective_report(checkpoint.pk, snapshot.pk, ["age_band"])
    assert fields == ["age_band"]
    assert PerspectiveSummary.objects.get(checkpoint=checkpoint).temperature == FAST.get(
        "temperature", 0.5
    )


def test_an_item_the_snapshot_does_not_hold_is_dropped_not_its_ranking(snapshot):
    """As an attention-check card: it gets no label, the ranking's other items still count."""
    dropped = snapshot.examples[0]
    snapshot.examples = snapshot.examples[1:]
    snapshot.save(update_fields=["examples"])
    checkpoint, _ = register_head(snapshot, seed=4)
    perspectives.compute_reports(checkpoint, fields=["age_band"], n_boot=0)
    summary = PerspectiveSummary.objects.get(checkpoint=checkpoint)
    rankings = selectors.snapshot_rankings(snapshot)
    assert any(dropped["item_id"] in order for _, _, order, _, _ in rankings)
    assert summary.n_rankings == len(rankings)


def test_the_portal_language_is_a_grouping_under_the_small_group_rule(snapshot):
    """Rankings made in Dutch by the 18-24 group and in English by the 25-34 group (those
    who prefer not to say ranked before languages: none): the report by language is the
    report by age band under other names, the group under k named only."""
    from annotation.models import Ranking

    members = {
        band: [p.pk for p in AnnotatorProfile.objects.all() if p.demographics["age_band"] == band]
        for band in ("18-24", "25-34")
    }
    Ranking.objects.filter(annotator__in=members["18-24"]).update(language="nl")
    Ranking.objects.filter(annotator__in=members["25-34"]).update(language="en")
    checkpoint, _ = register_head(snapshot, seed=3)
    assert "portal_language" not in perspectives.report_fields(snapshot)  # asked for only
    by_band, by_language = perspectives.compute_reports(
        checkpoint, fields=["age_band", "portal_language"], n_boot=200
    )
    assert (by_band.field, by_language.field) == ("age_band", "portal_language")
    rows = {(r.field, r.group): r for r in PerspectiveReport.objects.filter(checkpoint=checkpoint)}
    assert {g for f, g in rows if f == "portal_language"} == {"nl", "en"}
    dutch, young = rows[("portal_language", "nl")], rows[("age_band", "18-24")]
    assert dutch.status == PerspectiveReport.Status.COMPUTED
    for key in ("alignment", "spearman", "n_rankings", "n_annotators", "n_prompts"):
        assert dutch.figures[key] == pytest.approx(young.figures[key]), key
    english = rows[("portal_language", "en")]
    assert (english.status, english.alignment, english.figures) == ("fewer_than_k", None, {})
