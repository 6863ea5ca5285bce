"""The quality report from the database, checked against independent computations
(scipy's Friedman statistic, the krippendorff package fed raw reliability data,
scipy's Spearman, counts made here), the command and the staff API."""

import io
import json

import krippendorff
import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from scipy import stats

from annotation.models import AnnotatorStatus, DemographicField, RankingTask, StatusChange
from annotation.quality import standing
from annotation.quality import store as quality_store
from annotation.quality.report import quality_report
from annotation.rankings.exports import pseudonym

pytestmark = pytest.mark.django_db

K = 4
# Three annotators' orders (as indices into a task's sorted item ids) of two shared tasks.
ORDERS = {
    "ann": [[0, 1, 2, 3], [3, 2, 1, 0]],
    "ben": [[1, 0, 2, 3], [3, 1, 2, 0]],
    "cat": [[0, 2, 1, 3], [2, 3, 0, 1]],
}
SHOWN = [[3, 1, 0, 2], [0, 2, 3, 1]]


def ids(task) -> list[int]:
    return list(task.items.order_by("id").values_list("id", flat=True))


@pytest.fixture
def study(make_tasks, annotator, store_ranking, settings):
    """Two tasks ranked by three annotators (one of them also on a check task), one
    excluded annotator on the same tasks, one gold task; an age field."""
    settings.STEREORANK = {**settings.STEREORANK, "GOLD_RATE": 0.0, "GROUP_K": 3}
    DemographicField.objects.create(key="age_band", label="Age", choices=["18-24", "65-74"])
    tasks = make_tasks(2, k=K, overlap=5)
    (check,) = make_tasks(1, k=K + 1, overlap=5)
    (gold,) = make_tasks(1, k=K)
    RankingTask.objects.filter(pk=gold.pk).update(is_gold=True, gold_reference={"order": ids(gold)})
    RankingTask.objects.filter(pk=check.pk).update(check_item=ids(check)[-1], check_position=0)
    check.refresh_from_db()
    profiles = {}
    for name, orders in ORDERS.items():
        profile = annotator(name).profile
        profile.demographics = {"age_band": "18-24"}
        profile.save()
        profiles[name] = profile
        for task, order, shown in zip(tasks, orders, SHOWN, strict=True):
            items = ids(task)
            store_ranking(profile, task, [items[i] for i in order], [items[i] for i in shown], 10)
        # The check task: the card first as instructed, then the others in the task's order.
        items = ids(check)
        store_ranking(profile, check, [items[-1]] + items[:-1], items[::-1], 20)
    # ann ranks the gold task with one keyed pair of six reversed: score (5 - 1) / 6.
    g = ids(gold)
    store_ranking(profiles["ann"], gold, [g[1], g[0], g[2], g[3]], g[::-1], 30)
    bad = annotator("bad").profile
    for task in tasks:
        store_ranking(bad, task, ids(task), ids(task)[::-1])
    standing._move(bad, AnnotatorStatus.EXCLUDED, "test")
    return {"tasks": tasks, "check": check, "gold": gold, "profiles": profiles, "bad": bad}


def test_agreement_matches_friedman_and_krippendorff_on_raw_data(study):
    report = quality_report(n_boot=200)
    overall = report["agreement"]["overall"]
    # The two shared tasks and the check task (card dropped); not the excluded annotator.
    assert (overall["n_tasks"], overall["n_rankings"], overall["n_annotators"]) == (3, 9, 3)
    ws, units = [], []
    blocks = [[ORDERS[a][t] for a in ORDERS] for t in range(2)]
    blocks.append([[0, 1, 2, 3]] * 3)  # the check task without its card: all alike
    for block in blocks:
        # Rank of item i in a ranking = its position + 1; Friedman's samples are items.
        ranks = np.array([[order.index(i) + 1 for i in range(K)] for order in block])
        chi2 = stats.friedmanchisquare(*ranks.T).statistic
        ws.append(chi2 / (len(block) * (K - 1)))
        units.append((ranks - 1) / (K - 1))
    assert overall["kendall_w"]["value"] == pytest.approx(np.mean(ws))
    low, high = overall["kendall_w"]["ci_low"], overall["kendall_w"]["ci_high"]
    assert low <= overall["kendall_w"]["value"] <= high
    reliability = np.hstack(units)  # raters x (task, item) units
    for level in ("ordinal", "interval"):
        expected = krippendorff.alpha(reliability_data=reliability, level_of_measurement=level)
        assert overall[f"alpha_{level}"]["value"] == pytest.approx(expected)


def test_position_bias_counts_shown_against_final_positions(study):
    report = quality_report(n_boot=0)
    bias = report["position_bias"]
    # The check task (K + 1 cards shown) is left out: its card's place is instructed, and
    # a group is named by the cards participants saw (issue 37).
    assert set(bias) == {str(K)}
    table = np.zeros((K, K), dtype=int)
    for orders in ORDERS.values():
        for order, shown in zip(orders, SHOWN, strict=True):
            for s, item in enumerate(shown):
                table[s, order.index(item)] += 1
    assert bias[str(K)]["table"] == table.tolist()
    assert bias[str(K)]["n_rankings"] == 6
    x2 = stats.chi2_contingency(table, correction=False).statistic
    assert bias[str(K)]["chi2"] == pytest.approx(x2 * (K - 1) / K)


def test_annotator_table(study):
    rows = {r["pseudonym"]: r for r in quality_report(n_boot=0)["annotators"]}
    ann = rows[pseudonym(study["profiles"]["ann"].user_id)]
    assert (ann["tasks"], ann["gold_tasks"], ann["checks"]) == (4, 1, 1)
    assert ann["gold_score"] == pytest.approx(4 / 6)
    assert ann["check_pass_rate"] == 1.0 and ann["untouched_rate"] == 0.0
    assert ann["median_seconds"] == pytest.approx(15.0)  # 10, 10, 20, 30
    # Leave-one-out consensus on the shared tasks (check card dropped), by scipy.
    rhos = []
    for t in range(2):
        mine = [ORDERS["ann"][t].index(i) for i in range(K)]
        others = np.mean([[ORDERS[a][t].index(i) for i in range(K)] for a in ("ben", "cat")], 0)
        rhos.append(stats.spearmanr(mine, others).statistic)
    # The check task: everyone agrees, rho 1 (the others' consensus is not constant).
    rhos.append(1.0)
    assert ann["consensus_rho"] == pytest.approx(np.mean(rhos))
    bad = rows[pseudonym(study["bad"].user_id)]
    assert bad["status"] == "excluded" and bad["status_reason"] == "test"
    assert bad["untouched_rate"] == 0.0 and bad["tasks"] == 2
    # The excluded annotator is scored against those who count (and is not part of
    # their consensus: ann's rho above was computed without them).
    expected = np.mean(
        [
            stats.spearmanr(
                range(K),
                np.mean([[ORDERS[a][t].index(i) for i in range(K)] for a in ORDERS], 0),
            ).statistic
            for t in range(2)
        ]
    )
    assert bad["consensus_rho"] == pytest.approx(expected)


def test_groups_under_k_annotators_are_hidden_and_counted(study, settings):
    agreement = quality_report(n_boot=0)["agreement"]
    assert agreement["within_groups"]["age_band"]["18-24"]["n_annotators"] == 3  # GROUP_K = 3
    assert agreement["hidden_groups"]["age_band"] == 0
    settings.STEREORANK = {**settings.STEREORANK, "GROUP_K": 4}
    agreement = quality_report(n_boot=0)["agreement"]
    assert agreement["within_groups"]["age_band"] == {}
    assert agreement["hidden_groups"]["age_band"] == 1
    assert "18-24" not in json.dumps(agreement)


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=out)
    return out.getvalue()


def test_command_prints_the_report_as_text_and_as_json(study):
    assert json.loads(run("quality", "--json", "--n-boot", "50")) == quality_report(n_boot=50)
    text = run("quality", "--n-boot", "0")
    assert "Kendall's W" in text and "alpha (ordinal)" in text and f"K={K}:" in text
    for profile in study["profiles"].values():
        assert pseudonym(profile.user_id) in text
    with pytest.raises(CommandError, match="n-boot"):
        run("quality", "--n-boot", "-1")


def test_command_can_re_apply_the_policy(study, settings):
    ann = study["profiles"]["ann"]
    assert ann.status == AnnotatorStatus.OK  # gold 0.67 under the default rule
    settings.STEREORANK = {
        **settings.STEREORANK,
        "QUALITY_POLICY": {"gold_min_score": 0.9, "gold_min_tasks": 1},
    }
    out = run("quality", "--n-boot", "0", "--apply-policy")
    ann.refresh_from_db()
    assert ann.status == AnnotatorStatus.EXCLUDED
    change = StatusChange.objects.get(annotator=ann)
    assert change.reason == "gold score 0.67 below 0.9 after 1 gold tasks"
    assert "ok -> excluded" in out and change.reason in out


def test_staff_api_serves_the_report_and_refuses_others(study, annotator):
    staff = annotator("boss", staff=True)
    computing = staff.get("/api/staff/quality/?n_boot=20")
    assert computing.status_code == 202 and computing.json()["computed_at"] is None
    quality_store.refresh(False, 20)  # what the default queue's worker does
    body = staff.get("/api/staff/quality/?n_boot=20").json()
    assert body.pop("stale") is False and body.pop("computed_at") and body.pop("data_version")
    assert [body.pop(f"annotators_{k}") for k in ("page", "pages", "count")] == [1, 1, 4]
    assert body == quality_report(n_boot=20)
    assert staff.get("/api/staff/quality/?n_boot=-5").status_code == 400
    assert staff.get("/api/staff/quality/?n_boot=many").status_code == 400
    assert annotator("nosy").get("/api/staff/quality/").status_code == 403
    schema = staff.get("/api/schema/").content.decode()
    assert "/api/staff/quality/" in schema and "consensus_rho" in schema
