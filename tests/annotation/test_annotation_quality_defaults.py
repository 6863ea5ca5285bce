"""Quality control on by default (issue 32, part 6): ``build_tasks`` with no flags makes
the study's gold and attention-check tasks; turning a kind off needs a reason, recorded
on the study, and without one is refused in one line with nothing written."""

import io
import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from annotation.catalogue import loading as catalogue
from annotation.models import RankingTask, Study
from annotation.studies import lifecycle as studies

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=out)
    return out.getvalue()


@pytest.fixture
def small_catalogue(tmp_path, media_root):
    """The real catalogue's first three occupations, two placeholder images per prompt."""
    data = catalogue.read_catalogue()
    data["occupations"] = data["occupations"][:3]
    path = tmp_path / "catalogue.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    catalogue.load_catalogue(2, path)
    return path


def _kinds(study: Study) -> dict[str, int]:
    tasks = RankingTask.objects.filter(study=study)
    return {
        "gold": tasks.filter(is_gold=True).count(),
        "checks": tasks.filter(check_item__isnull=False).count(),
        "ordinary": tasks.filter(is_gold=False, check_item__isnull=True).count(),
    }


def test_build_tasks_with_no_flags_makes_the_studys_gold_and_check_tasks(small_catalogue):
    study = studies.default_study()
    assert (study.gold_per_occupation, study.checks_per_occupation) == (1, 1)
    out = run("build_tasks", "--size", "3")
    assert _kinds(study) == {"gold": 3, "checks": 3, "ordinary": 6}  # 3 occupations x 6 items
    assert out.splitlines() == [
        "6 tasks built",
        "3 gold tasks built",
        "3 attention-check tasks built",
    ]
    for task in RankingTask.objects.filter(is_gold=True):
        assert task.reference().pairs  # keyed stereotypical before diverse
    run("build_tasks", "--size", "3")  # idempotent: topped up already
    assert _kinds(study) == {"gold": 3, "checks": 3, "ordinary": 6}
    # The study's own counts, not a constant.
    Study.objects.filter(pk=study.pk).update(gold_per_occupation=2, checks_per_occupation=2)
    run("build_tasks", "--size", "3")
    assert _kinds(study) == {"gold": 6, "checks": 6, "ordinary": 6}


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--gold-per-occupation", "0"], "--gold-per-occupation 0 turns gold tasks off"),
        (
            ["--checks-per-occupation", "0", "--quality-off-reason", "  "],
            "--checks-per-occupation 0 turns attention-check tasks off",
        ),
        (
            ["--gold-per-occupation", "0", "--checks-per-occupation", "0"],
            "--gold-per-occupation 0 and --checks-per-occupation 0 turns gold tasks and "
            "attention-check tasks off",
        ),
    ],
)
def test_turning_quality_off_without_a_reason_is_refused_and_writes_nothing(
    small_catalogue, flags, says
):
    with pytest.raises(CommandError) as refused:
        run("build_tasks", "--size", "3", *flags)
    message = str(refused.value)
    assert "\n" not in message and message.startswith(says)
    assert message.endswith("say why with --quality-off-reason TEXT (recorded on the study)")
    assert not RankingTask.objects.exists()  # no ordinary task either
    study = studies.default_study()
    assert (study.gold_per_occupation, study.checks_per_occupation) == (1, 1)
    assert study.quality_off_reason == ""


def test_turning_quality_off_with_a_reason_records_it_on_the_study(small_catalogue):
    reason = "pilot of the portal with lab members, no crowd workers"
    out = run(
        *("build_tasks", "--size", "3", "--gold-per-occupation", "0"),
        *("--quality-off-reason", reason),
    )
    study = studies.default_study()
    assert (study.gold_per_occupation, study.checks_per_occupation) == (0, 1)
    assert study.quality_off_reason == reason
    assert _kinds(study) == {"gold": 0, "checks": 3, "ordinary": 6}
    assert out.splitlines()[-1] == f"gold tasks off: {reason}"
    # The plain command (bin/run runs it on every start) keeps the study's choice.
    run("build_tasks", "--size", "3")
    assert _kinds(study) == {"gold": 0, "checks": 3, "ordinary": 6}
    # Turning more off needs a reason of its own; the recorded one does not stretch to it.
    with pytest.raises(CommandError, match="^--checks-per-occupation 0 turns gold tasks and"):
        run("build_tasks", "--checks-per-occupation", "0")
    study.refresh_from_db()
    assert (study.checks_per_occupation, study.quality_off_reason) == (1, reason)
    # Back on: the gold tasks come, and the reason goes with the off setting.
    run("build_tasks", "--size", "3", "--gold-per-occupation", "1")
    study.refresh_from_db()
    assert (study.gold_per_occupation, study.quality_off_reason) == (1, "")
    assert _kinds(study)["gold"] == 3
    # A reason with nothing off is refused (it would say something untrue).
    with pytest.raises(CommandError, match="quality_off_reason is for turning"):
        run("build_tasks", "--quality-off-reason", "why not")


def test_create_study_takes_the_quality_settings(media_root):
    with pytest.raises(CommandError, match="^Cannot create study 'w2': turning attention-check"):
        run("create_study", "w2", "--checks-per-occupation", "0")
    assert not Study.objects.filter(slug="w2").exists()
    out = run(
        *("create_study", "w2", "--checks-per-occupation", "0"),
        *("--quality-off-reason", "checks tested in wave 1"),
    )
    assert "attention-check tasks off: checks tested in wave 1" in out
    study = Study.objects.get(slug="w2")
    assert (study.gold_per_occupation, study.checks_per_occupation) == (1, 0)
    assert study.quality_off_reason == "checks tested in wave 1"
    run("create_study", "w3", "--gold-per-occupation", "2")
    assert Study.objects.get(slug="w3").gold_per_occupation == 2


def test_the_staff_study_api_takes_the_quality_settings():
    api = APIClient()
    api.force_authenticate(
        get_user_model().objects.create_user("lab", password="pw-123456", is_staff=True)
    )
    made = api.post("/api/staff/studies/", {"slug": "plain"}, format="json")
    assert made.status_code == 201
    assert made.json()["gold_per_occupation"] == made.json()["checks_per_occupation"] == 1
    assert made.json()["quality_off_reason"] == ""

    refused = api.post(
        "/api/staff/studies/", {"slug": "nogold", "gold_per_occupation": 0}, format="json"
    )
    assert refused.status_code == 400
    assert "needs a reason (quality_off_reason)" in refused.json()["detail"]
    assert not Study.objects.filter(slug="nogold").exists()

    body = {"slug": "nogold", "gold_per_occupation": 0, "quality_off_reason": "no gold yet"}
    made = api.post("/api/staff/studies/", body, format="json")
    assert made.status_code == 201
    assert made.json()["gold_per_occupation"] == 0
    assert Study.objects.get(slug="nogold").quality_off_reason == "no gold yet"

    bad = api.post(
        "/api/staff/studies/", {"slug": "neg", "checks_per_occupation": -1}, format="json"
    )
    assert bad.status_code == 400 and "checks_per_occupation" in bad.json()
    extra = api.post(
        "/api/staff/studies/", {"slug": "odd", "quality_off_reason": "because"}, format="json"
    )
    assert extra.status_code == 400 and "quality_off_reason is for" in extra.json()["detail"]
