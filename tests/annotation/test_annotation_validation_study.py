"""A validation study from conditions to a report (issue 17): blinded tasks of one
occupation with both conditions in equal numbers, shuffled with the shown order recorded,
synthetic annotators with a planted preference, and the report's tests recomputed with scipy
from the exported per-annotator means. Validation rankings never become labels."""

import io
import json
from collections import Counter

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from scipy import stats

from annotation.errors import ConditionError
from annotation.models import Ranking, RankingTask
from annotation.models.validation import ConditionImage
from annotation.rankings import selectors
from annotation.rankings.exports import pseudonym
from annotation.validation import building as validation_tasks
from annotation.validation import results as validation_results
from tests.validation_helpers import make_validation_study


@pytest.fixture
def study(db, media_root, tmp_path):
    """Six occupations' stereotypical prompts, as written and rewritten, 3 placeholder
    images each: one task of 6 (3 + 3) per occupation."""
    return make_validation_study(tmp_path)


def roles_of(task):
    return Counter(
        ConditionImage.objects.filter(item__task_items__task=task).values_list(
            "prompt__condition__role", flat=True
        )
    )


def test_each_task_holds_one_occupation_and_both_conditions_equally(study):
    tasks = RankingTask.objects.filter(study=study)
    assert tasks.count() == 6
    for task in tasks:
        assert roles_of(task) == {"baseline": 3, "treatment": 3}
        occupations = set(task.items.values_list("prompt__occupation", flat=True))
        assert occupations == {task.occupation_id}
        assert task.card_text == "none" and task.overlap == validation_tasks.VALIDATION_OVERLAP
    assert validation_tasks.build_validation_tasks(study) == 0  # every image is in a task


def test_cards_are_blinded_and_the_shown_order_recorded(study, portal_client):
    from annotation.models import AnnotatorProfile
    from annotation.participants import services

    client = portal_client("viewer", consent=False)
    profile = AnnotatorProfile.objects.get(user__username="viewer")
    profile.study = study
    profile.save(update_fields=["study"])
    services.give_consent(profile)
    page = client.get("/rank/")
    html = page.content.decode()
    assert page.status_code == 200, html[:500]
    task = RankingTask.objects.get(pk=profile.assignments.get().task_id)
    texts = set(
        ConditionImage.objects.filter(item__task_items__task=task).values_list(
            "prompt__text", flat=True
        )
    )
    texts |= set(task.items.values_list("prompt__text", flat=True))
    assert texts and not any(t in html for t in texts)
    assert "original" not in html and "optimised" not in html
    shown = profile.assignments.get().shown_order
    assert sorted(shown) == sorted(task.items.values_list("pk", flat=True))
    study.shows_prompts = True
    study.save(update_fields=["shows_prompts"])
    RankingTask.objects.filter(study=study).update(card_text="condition")
    html = client.get("/rank/").content.decode()
    assert any(t in html for t in texts if t.endswith("an older woman"))


def simulate(slug, count, effect, seed=0):
    out = io.StringIO()
    args = ["--study", slug, "--count", str(count), "--seed", str(seed), "--effect", str(effect)]
    call_command("simulate_annotators", *args, stdout=out)
    return out.getvalue()


def test_a_planted_effect_and_the_report_against_scipy(study):
    simulate("val", 12, 1.5)
    assert Ranking.objects.filter(task__study=study).count() == 12 * 6
    out = io.StringIO()
    call_command("validation_report", "val", "--json", "--n-boot", "200", stdout=out)
    report = json.loads(out.getvalue())
    assert report["n_annotators"] == 12 and report["n_rankings"] == 72
    assert report["synthetic_annotators"] == 12 and report["k_items"] == 6
    names = {pseudonym(r.annotator.user_id) for r in Ranking.objects.filter(task__study=study)}
    assert {a["annotator"] for a in report["annotators"]} == names
    orig = np.array([a["mean_rank"]["original"] for a in report["annotators"]])
    opt = np.array([a["mean_rank"]["optimised"] for a in report["annotators"]])
    np.testing.assert_allclose(orig + opt, 7.0)  # K + 1: the two means of one annotator
    w = stats.ttest_ind(opt, orig, equal_var=False)
    assert [report["welch"][k] for k in ("t", "df", "p")] == pytest.approx(
        [w.statistic, w.df, w.pvalue]
    )
    p = stats.ttest_rel(opt, orig)
    assert [report["paired_t"][k] for k in ("t", "df", "p")] == pytest.approx(
        [p.statistic, p.df, p.pvalue]
    )
    x = stats.wilcoxon(opt, orig)
    assert [report["wilcoxon"]["statistic"], report["wilcoxon"]["p"]] == pytest.approx(
        [x.statistic, x.pvalue]
    )
    assert report["paired_t"]["p"] < 0.01 and opt.mean() > orig.mean()
    d = report["bootstrap"]["difference"]
    assert 0 < d["ci_low"] < d["value"] < d["ci_high"]
    assert report["power"]["paired_t"]["achieved"] > 0.5
    assert report["conditions_made"]["optimised"]["source"] == "file"
    text = io.StringIO()
    call_command("validation_report", "val", "--n-boot", "50", stdout=text)
    assert "Welch: t(" in text.getvalue() and "paired: t(11)" in text.getvalue()


def test_validation_rankings_never_become_labels(study):
    simulate("val", 3, 1.0)
    assert Ranking.objects.filter(task__study=study).count() == 18
    assert selectors.label_rows(include_synthetic=True) == []


def test_refusals_are_one_line(study):
    with pytest.raises(CommandError, match="has no rankings to report yet"):
        call_command("validation_report", "val")
    with pytest.raises(CommandError, match="no study 'nope'"):
        call_command("validation_report", "nope")
    with pytest.raises(CommandError, match="is a collection study, not a validation one"):
        call_command("validation_report", "default")
    with pytest.raises(CommandError, match="--effect is for validation studies"):
        call_command("simulate_annotators", "--count", "1", "--effect", "1")
    with pytest.raises(ConditionError, match="task size 5 is odd"):
        study.task_size = 5
        validation_tasks.build_validation_tasks(study)
    assert validation_results.linked_studies(1) == []


def test_build_tasks_of_imported_images_adds_checks_and_gold_once(study):
    """The import path (``validation_images --build-tasks``) gives the study the quality
    tasks ``create_study --placeholder-images`` gives it: one attention-check task and one
    gold task per occupation, beside the ordinary tasks; run again, it adds nothing."""
    out = io.StringIO()
    call_command("validation_images", study.slug, "--build-tasks", stdout=out)
    tasks = RankingTask.objects.filter(study=study)
    checks = Counter(tasks.filter(check_item__isnull=False).values_list("occupation", flat=True))
    gold = Counter(tasks.filter(is_gold=True).values_list("occupation", flat=True))
    ordinary = tasks.filter(is_gold=False, check_item__isnull=True)
    assert ordinary.count() == 6  # the report's tasks are untouched, no check card inside
    assert set(checks.values()) == {1} and len(checks) == 6
    assert gold and set(gold.values()) == {1}
    assert f"{len(checks)} validation tasks and {sum(gold.values())} gold tasks" in out.getvalue()
    again = io.StringIO()
    call_command("validation_images", study.slug, "--build-tasks", stdout=again)
    assert "0 validation tasks and 0 gold tasks built" in again.getvalue()
