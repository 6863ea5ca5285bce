"""A validation study's gold tasks and attention checks (issue 17): ``create_study --kind
validation`` builds them as a collection study's, blinded like the rest, the report leaves
them out, and the quality policy catches a careless simulated annotator through them."""

import io
import json

import pytest
from django.core.management import call_command

from annotation.catalogue.loading import load_catalogue
from annotation.models import AnnotatorProfile, AnnotatorStatus, PromptType, RankingTask
from annotation.models.validation import ConditionImage
from annotation.studies.simulation import SyntheticKind

pytestmark = pytest.mark.slow


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_gold_and_checks_catch_a_careless_annotator(
    transactional_db, media_root, diversity_version, settings
):
    settings.STEREORANK = {**settings.STEREORANK, "GOLD_RATE": 0.3, "QUALITY_N_BOOT": 0}
    load_catalogue()
    out = run("create_study", "val", "--kind", "validation", "--placeholder-images")
    tasks = RankingTask.objects.filter(study__slug="val")
    gold = tasks.filter(is_gold=True)
    occupations = set(tasks.filter(is_gold=False).values_list("occupation", flat=True))
    assert set(gold.values_list("occupation", flat=True)) == occupations
    assert f"and {gold.count()} gold tasks" in out
    for task in gold:
        assert task.card_text == "none"  # blinded as the others
        items = list(task.items.select_related("prompt"))
        assert len(items) == 6 and not ConditionImage.objects.filter(item__in=items).exists()
        types = {i.pk: i.prompt.prompt_type for i in items}
        assert {types[a] for a, _ in task.gold_reference["pairs"]} == {PromptType.STEREOTYPICAL}
        assert {types[b] for _, b in task.gold_reference["pairs"]} == {PromptType.DIVERSE}
        assert len(task.gold_reference["pairs"]) == 9
    checks = tasks.filter(check_item__isnull=False)
    assert set(checks.values_list("occupation", flat=True)) == occupations
    run("consent", "--study", "val", "--demo")
    run("study_status", "val", "open")
    out = run(
        *("simulate_annotators", "--study", "val", "--count", "8", "--effect", "1.0"),
        *("--careless", "0.25", "--seed", "3"),
    )
    profiles = list(AnnotatorProfile.objects.filter(study__slug="val", is_synthetic=True))
    careless = {p.pk for p in profiles if p.synthetic_kind != SyntheticKind.CAREFUL}
    excluded = {p.pk for p in profiles if p.status == AnnotatorStatus.EXCLUDED}
    assert len(careless) == 2 and careless <= excluded, "the careless are caught"
    assert not excluded - careless, "no careful annotator is excluded"
    careful = [p for p in profiles if p.pk not in careless]
    assert all(p.rankings.filter(task__is_gold=True).exists() for p in careful)
    report = json.loads(run("validation_report", "val", "--json"))
    assert report["n_annotators"] == len(careful)  # gold and checks are not in its figures
