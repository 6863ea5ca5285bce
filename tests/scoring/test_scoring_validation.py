"""A validation study's conditions made by a version (issue 17): its flagged prompts, the
optimiser's rewrites frozen with their scores, threshold and version (checked by scoring the
texts again), two versions' optimisers side by side, and the study from the active version."""

import io
import json

import pytest
from django.core.management import CommandError, call_command

from annotation.catalogue.loading import load_catalogue
from annotation.models import Prompt, Study
from annotation.models.validation import ConditionImage
from annotation.validation import conditions
from scoring import services, validation

pytestmark = pytest.mark.slow


@pytest.fixture
def study(db, media_root):
    load_catalogue()
    return Study.objects.create(
        slug="val", name="Validation", platform="generic", kind="validation"
    )


def test_flagged_prompts_are_those_the_version_flags(study, diversity_version):
    loaded, flagged, scores = validation.flagged_prompts()
    originals = list(Prompt.objects.filter(origin__isnull=True))
    again = services.score_prompts([p.text for p in originals])
    assert loaded.version == diversity_version.version
    assert {p.pk for p in flagged} == {
        p.pk for p, r in zip(originals, again.results, strict=True) if r.flagged
    }
    assert 0 < len(flagged) < len(originals)
    for p, r in zip(originals, again.results, strict=True):
        assert scores[p.pk] == pytest.approx(r.score, abs=1e-6)


def test_the_optimised_condition_is_frozen_with_its_provenance(study, diversity_version):
    made = conditions.from_active_version(study, placeholder_images=2)  # through the signal
    base = study.conditions.get(role="baseline")
    treat = study.conditions.get(role="treatment")
    assert (treat.source, treat.version) == ("optimised", diversity_version.version)
    assert treat.provenance["rewriter"] == "offline"
    assert treat.provenance["threshold"] == pytest.approx(diversity_version.threshold)
    assert made["prompts"] == base.prompts.count() == treat.prompts.count() > 0
    rewrites = list(treat.prompts.select_related("prompt"))
    again = services.score_prompts([cp.text for cp in rewrites]).results
    for cp, r in zip(rewrites, again, strict=True):
        assert cp.score == pytest.approx(r.score, abs=1e-6)
        assert cp.provenance["passed"] == (not r.flagged)
        assert cp.provenance["gain"] == pytest.approx(
            cp.score - cp.provenance["original_score"], abs=1e-9
        )
        assert cp.text != cp.prompt.text
    assert sum(cp.provenance["passed"] for cp in rewrites) >= len(rewrites) / 2
    assert made["images"] == ConditionImage.objects.count() == 2 * 2 * made["prompts"]
    assert made["tasks"] > 0  # K = 6 from 2 images a prompt: occupations with 2+ flagged prompts
    call_command(
        "simulate_annotators",
        "--study",
        "val",
        "--count",
        "6",
        "--effect",
        "1.5",
        stdout=io.StringIO(),
    )
    out = io.StringIO()
    call_command("validation_report", "val", "--json", "--n-boot", "50", stdout=out)
    report = json.loads(out.getvalue())
    assert report["conditions_made"]["optimised"]["version"] == diversity_version.version
    assert report["n_annotators"] == 6 and report["paired_t"]["difference"] > 0


def test_two_versions_optimisers_as_two_conditions(study, diversity_version, make_version):
    other = make_version(7, threshold=diversity_version.threshold)
    out = io.StringIO()
    call_command(
        "validation_condition",
        "val",
        "--source",
        "optimised",
        "--role",
        "baseline",
        "--name",
        f"v{diversity_version.version}",
        stdout=out,
    )
    call_command(
        "validation_condition",
        "val",
        "--source",
        "optimised",
        "--role",
        "treatment",
        "--name",
        f"v{other.version}",
        "--version",
        str(other.version),
        stdout=out,
    )
    versions = dict(study.conditions.values_list("role", "version"))
    assert versions == {"baseline": diversity_version.version, "treatment": other.version}
    with pytest.raises(CommandError, match="has a treatment condition already"):
        call_command("validation_condition", "val", "--source", "original", "--role", "treatment")
    with pytest.raises(CommandError, match="no study 'nope'"):
        call_command("validation_condition", "nope", "--source", "original", "--role", "baseline")
