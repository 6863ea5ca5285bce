"""A version's model card carries the result of the validation study that judged its
optimiser (issue 17): the card's figures are the study's report's, in the card's words,
and the exported card carries them too."""

import io

import pytest
import yaml
from django.core.management import call_command
from training_study import make_perspective_study, register_head

from annotation.validation import results as validation_results
from tests.validation_helpers import make_validation_study
from training import services
from training.snapshots.services import create_snapshot

pytestmark = pytest.mark.slow


def parse(card: str) -> tuple[dict, str]:
    meta, body = card[4:].split("\n---\n", 1)
    return yaml.safe_load(meta), body


def test_the_card_of_a_version_reports_its_validation_study(db, tmp_path, settings, media_root):
    settings.STEREORANK = {**settings.STEREORANK, "QUALITY_N_BOOT": 100}
    make_perspective_study(tmp_path, annotators=6, overlap=1)
    checkpoint, _ = register_head(create_snapshot(include_synthetic=True))
    other, _ = register_head(create_snapshot(include_synthetic=True), seed=1)
    study = make_validation_study(tmp_path, slug="judged", version=checkpoint.version)
    call_command(
        "simulate_annotators",
        "--study",
        "judged",
        "--count",
        "10",
        "--effect",
        "1.2",
        stdout=io.StringIO(),
    )
    report = validation_results.report(study, n_boot=100)
    meta, body = parse(services.model_card(checkpoint))
    (v,) = meta["stereorank"]["validation"]
    assert v["study"] == "judged" and v["n_annotators"] == 10 == report["n_annotators"]
    assert v["welch"] == {k: report["welch"][k] for k in ("t", "df", "p", "text")}
    assert v["paired_t"]["text"] == report["paired_t"]["text"]
    assert v["difference"] == report["bootstrap"]["difference"]
    base = report["per_condition"]["original"]
    assert f"Welch's t-test, {report['welch']['text']}" in body
    assert f"original: M = {base['mean']:.2f}, SD = {base['sd']:.2f} (n = 10)" in body
    d = report["bootstrap"]["difference"]
    assert f"{d['value']:.2f} (95% CI {d['ci_low']:.2f} to {d['ci_high']:.2f})" in body
    # another version's card links no study; the exported card carries the result
    assert "No validation study is linked" in services.model_card(other)
    out = tmp_path / "v.pth"
    call_command(
        "export_checkpoint",
        str(checkpoint.version),
        "--format",
        "seed",
        "--out",
        str(out),
        stdout=io.StringIO(),
    )
    assert f"Welch's t-test, {report['welch']['text']}" in (tmp_path / "v.md").read_text()
