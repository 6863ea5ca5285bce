"""The model card of a simulated study's trained version: every figure against its source;
the command, the exports, the API and the registry page carry it."""

import io
import json
import tomllib
import zipfile
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import yaml
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from scipy import stats
from training_study import ENCODER, FAST, make_perspective_study, register_head

from annotation.models import AnnotatorProfile, Ranking
from annotation.stats import validation_report, validation_sim
from tests.staff import make_staff
from training import services
from training.errors import RegistryError
from training.ml.checkpoints import MANIFEST_FILE
from training.models import Evaluation, PerspectiveReport
from training.perspectives.services import compute_reports
from training.runs.augmentation import request_augmentation, run_augmentation
from training.runs.services import execute_run, start_run, training_examples
from training.snapshots.services import EVAL, create_snapshot

pytestmark = pytest.mark.slow
K = 5
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def study(db, tmp_path, settings):
    """15 synthetic annotators: 10 aged 18-24, 3 aged 25-34 (under k), 2 not saying."""
    settings.STEREORANK = {**settings.STEREORANK, "GROUP_K": K}
    return make_perspective_study(tmp_path)


def parse(card: str) -> tuple[dict, str]:
    """The YAML front matter and the Markdown body."""
    assert card.startswith("---\n")
    meta, body = card[4:].split("\n---\n", 1)
    return yaml.safe_load(meta), body


@pytest.fixture
def trained(study):
    """A version trained on the study's snapshot with offline paraphrases, its age report stored."""
    snapshot = create_snapshot(include_synthetic=True)
    augmentation, _ = request_augmentation(snapshot, "offline", n=2)
    augmentation = run_augmentation(augmentation.pk, ENCODER)
    run = start_run(snapshot, augmentation=augmentation, hyperparameters=FAST, enqueue=False)
    assert "done" in execute_run(run.pk, "node-a")
    run.refresh_from_db()
    compute_reports(run.checkpoint, fields=["age_band"], n_boot=50)
    return snapshot, run, run.checkpoint


def test_every_figure_of_the_card_is_its_source(trained):
    snapshot, run, checkpoint = trained
    card = services.model_card(checkpoint)
    meta, body = parse(card)
    s = meta["stereorank"]
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["license"] == pyproject["project"]["license"]["text"].lower()
    assert meta["base_model"] == checkpoint.encoder_identity["name"] == s["encoder"]["name"]
    assert s["encoder"]["dim"] == 384 and s["version"] == checkpoint.version
    assert s["head_sha256"] == checkpoint.head_sha256 and s["data_hash"] == checkpoint.data_hash

    # performance: the row's metrics, and rho recomputed from the stored predictions
    perf, m = s["performance"], checkpoint.metrics
    assert perf["spearman"] == m["spearman"] and perf["spearman_ci"] == m["spearman_ci"]
    evaluation = Evaluation.objects.get(checkpoint=checkpoint, snapshot=snapshot)
    eval_rows = [r for r in snapshot.examples if r["split"] == EVAL]
    rho = stats.spearmanr(
        [evaluation.predictions[r["key"]] for r in eval_rows], [r["label"] for r in eval_rows]
    ).statistic
    assert perf["spearman"] == pytest.approx(rho, abs=1e-9)
    assert m["spearman_ci"][0] <= perf["spearman"] <= m["spearman_ci"][1]
    assert perf["n_items"] == snapshot.eval_count == len(eval_rows)
    (result,) = meta["model-index"][0]["results"]
    assert result["dataset"]["revision"] == snapshot.content_hash
    assert {x["type"]: x["value"] for x in result["metrics"]} == {
        "spearmanr": m["spearman"],
        "kendalltau": m["kendall_tau"],
        "accuracy": m["pairwise_accuracy"],
    }
    assert perf["history"] == run.history and len(run.history) == FAST["epochs"]
    assert [h["epoch"] for h in perf["history"]] == [1, 2, 3]
    per_occ = {o: r for o, r in m["per_occupation"].items() if r is not None}
    spread = perf["per_occupation_spread"]
    assert spread["median"] == pytest.approx(float(np.median(list(per_occ.values()))))
    assert spread["min"]["rho"] == min(per_occ.values()) == per_occ[spread["min"]["occupation"]]
    assert spread["max"]["rho"] == max(per_occ.values()) == per_occ[spread["max"]["occupation"]]
    assert f"Spearman's ρ: {m['spearman']:.4f} (95% CI {m['spearman_ci'][0]:.4f}" in body
    first, last = run.history[0], run.history[-1]
    assert f"{first['rho']:.4f} (epoch 1) → {last['rho']:.4f} (epoch 3)" in body

    # the recipe and the threshold, as the run and the row recorded them
    assert s["recipe"]["name"] == run.hyperparameters["recipe"] == "standard"
    assert s["recipe"]["hyperparameters"]["lr"] == FAST["lr"] == run.hyperparameters["lr"]
    assert s["threshold"] == {
        "value": checkpoint.threshold,
        "basis": checkpoint.threshold_basis,
        "flag": checkpoint.metrics["flag"],
    }
    assert f"snapshot {snapshot.pk}" in checkpoint.threshold_basis

    # the training data: the snapshot, the database's rankings and people, the augmentation
    data = s["training_data"]
    manifest = json.loads((Path(checkpoint.path) / MANIFEST_FILE).read_text())
    assert data["content_hash"] == snapshot.content_hash == manifest["extra"]["snapshot_hash"]
    assert data["rankings"] == snapshot.ranking_count == Ranking.objects.count()
    ranked = Ranking.objects.order_by().values("annotator").distinct().count()
    assert data["annotators"] == ranked, (ranked, AnnotatorProfile.objects.count())
    assert data["items"] == 72 and data["prompts"] == 36 and len(data["occupations"]) == 12
    assert data["prompt_types"] == {"diverse": 24, "neutral": 24, "stereotypical": 24}
    assert data["split"]["train"] + data["split"]["eval"] == 72
    augmentation = run.augmentation
    assert data["augmentation"]["kept"] == augmentation.paraphrases.count() > 0
    train_set, _ = training_examples(run)
    ex = data["training_examples"]
    assert ex["originals"] == snapshot.train_count
    assert ex["total"] == len(train_set) == manifest["extra"]["train_examples"]
    assert ex["paraphrased_share"] == pytest.approx(ex["paraphrases"] / len(train_set))
    assert f"{ex['paraphrased_share']:.1%} of the training examples are paraphrases" in body

    # demographics: k-anonymous counts only; the 25-34 group (3 < k) never appears
    people = AnnotatorProfile.objects.filter(pk__in=Ranking.objects.values("annotator"))
    bands = Counter(p.demographics["age_band"] for p in people)
    (age,) = [f for f in data["demographics"] if f["field"] == "age_band"]
    shown = {b: n for b, n in bands.items() if n >= K}
    assert 0 < bands["25-34"] < K and shown == {"18-24": bands["18-24"]}
    assert age["groups"] == [{"group": "18-24", "annotators": bands["18-24"]}]
    assert age["hidden_groups"] == len(bands) - len(shown)
    assert all(g["annotators"] >= K for f in data["demographics"] for g in f["groups"])
    assert "25-34" not in card

    # the perspective report: the least aligned computed group, as stored
    (persp,) = s["perspectives"]
    row = PerspectiveReport.objects.filter(
        checkpoint=checkpoint, field="age_band", status="computed"
    ).order_by("alignment")[0]
    assert persp["least_aligned"]["group"] == row.group
    assert persp["least_aligned"]["alignment"] == row.alignment
    assert persp["hidden_groups"] == 1  # 25-34, named nowhere on the card

    # no validation study is linked to a version yet
    assert s["validation"] == []
    assert "No validation study is linked to this version." in body


def test_a_linked_validation_study_is_reported_with_the_cards_test(study):
    snapshot = create_snapshot(include_synthetic=True)
    checkpoint, _ = register_head(snapshot)
    sim = validation_sim.simulate(np.random.default_rng(3), annotators=12, effect=1.0)
    report = validation_report.report(validation_sim.records(sim), n_boot=50)
    meta, body = parse(services.model_card(checkpoint, [{"study": "pilot", "report": report}]))
    (v,) = meta["stereorank"]["validation"]
    base = report["per_condition"]["original"]
    assert v["welch"]["t"] == report["welch"]["t"] and v["welch"]["df"] == report["welch"]["df"]
    assert v["per_condition"]["original"]["sd"] == base["sd"]
    assert v["n_annotators"] == 12 == report["n_annotators"]
    assert f"Welch's t-test, {report['welch']['text']}" in body
    assert f"original: M = {base['mean']:.2f}, SD = {base['sd']:.2f}" in body
    # a version with no run: no history, said so; the card still renders
    assert meta["stereorank"]["performance"]["history"] == []
    assert "no run recorded with this version" in body


def test_the_command_exports_api_and_registry_page_carry_the_card(study, tmp_path, capsys):
    snapshot = create_snapshot(include_synthetic=True)
    checkpoint, _ = register_head(snapshot)
    card = services.model_card(checkpoint)

    call_command("model_card", str(checkpoint.version))
    assert capsys.readouterr().out == card
    out = tmp_path / "card.md"
    call_command("model_card", str(checkpoint.version), "--out", str(out))
    assert out.read_text() == card
    with pytest.raises(CommandError, match="^there is no version 99$"):
        call_command("model_card", "99")

    native = services.export_checkpoint(checkpoint, "native", tmp_path / "native")
    assert (native / "README.md").read_text() == card
    pth = services.export_checkpoint(checkpoint, "seed", tmp_path / "v1.pth")
    assert pth.is_file() and (tmp_path / "v1.md").read_text() == card
    with pytest.raises(RegistryError, match="unknown format 'onnx'"):
        services.export_checkpoint(checkpoint, "onnx", tmp_path / "x")

    staff = make_staff("boss")  # owns the default study, which the version was trained on
    client = Client()
    client.force_login(staff)
    api = client.get(f"/api/training/checkpoints/{checkpoint.version}/card/")
    assert api.status_code == 200 and api["Content-Type"].startswith("text/markdown")
    assert api.content.decode() == card
    assert client.get("/api/training/checkpoints/99/card/").status_code == 404

    url = reverse("dashboards:export", args=[checkpoint.version])
    page_card = client.get(url, {"format": "card"})
    assert page_card.content.decode() == card
    assert page_card["Content-Disposition"].endswith('filename="stereorank-v1.md"')
    archive = zipfile.ZipFile(
        io.BytesIO(b"".join(client.get(url, {"format": "native"}).streaming_content))
    )
    assert archive.read("stereorank-v1/README.md").decode() == card
