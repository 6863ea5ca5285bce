"""A trained run's threshold is calibrated (KDE crossing) on its train split, not the
seed's 0.12; when it cannot be, the checkpoint says why; the flag's precision, recall and
F1 on the eval split are stored and shown. On SQLite: one real MiniLM run."""

import io
import re
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils.html import escape
from scipy import optimize, stats
from training_study import FAST

from tests.staff import make_staff
from training.errors import RegistryError
from training.ml.calibration import SEED_THRESHOLD
from training.ml.checkpoints import load
from training.models import Checkpoint
from training.registry.card import export_checkpoint as card_export
from training.registry.services import export_checkpoint, import_checkpoint
from training.runs.services import execute_run, start_run
from training.snapshots.services import create_snapshot, prompt_types
from training.storage import encoders

pytestmark = pytest.mark.slow


def independent_crossing(stereo: np.ndarray, other: np.ndarray) -> float:
    """First root of f_s - f_o above the stereotypical KDE's mode, by brentq on scipy's KDEs."""
    f_s, f_o = stats.gaussian_kde(stereo), stats.gaussian_kde(other)
    x = np.linspace(min(stereo.min(), other.min()), max(stereo.max(), other.max()), 50001)
    mode = x[np.argmax(f_s(x))]
    above = x[x >= mode]
    d = f_s(above) - f_o(above)
    k = int(np.flatnonzero((d[:-1] > 0) & (d[1:] <= 0))[0])
    return optimize.brentq(lambda v: f_s(v)[0] - f_o(v)[0], above[k], above[k + 1])


def test_a_trained_runs_threshold_comes_from_calibration(study, training_storage):
    snapshot = create_snapshot(include_synthetic=True)
    run = start_run(snapshot, hyperparameters=FAST, enqueue=False)
    assert execute_run(run.pk, "node-a") == "done: v1"
    checkpoint = run.__class__.objects.get(pk=run.pk).checkpoint

    # the prompts the card calibrates on: each distinct prompt of the train split, once
    prompts = {r["text"]: r["prompt_type"] for r in snapshot.examples if r["split"] == "train"}
    encoder = encoders.encoder(checkpoint.encoder_name)
    model = load(Path(checkpoint.path), encoder).to_model(encoder)
    scores = model.score(list(prompts), cache=encoders.embedding_cache())
    flags = np.array([t == "stereotypical" for t in prompts.values()])
    expected = independent_crossing(scores[flags], scores[~flags])

    # the flag judged on the eval split's prompts, which calibration never saw, counted here
    held = {r["text"]: r["prompt_type"] for r in snapshot.examples if r["split"] == "eval"}
    assert not set(held) & set(prompts)
    flagged = model.score(list(held), cache=encoders.embedding_cache()) < checkpoint.threshold
    truth = np.array([t == "stereotypical" for t in held.values()])
    tp = int((flagged & truth).sum())
    flag = checkpoint.metrics["flag"]
    assert (flag["n_prompts"], flag["n_stereotypical"], flag["n_flagged"]) == (
        len(held),
        int(truth.sum()),
        int(flagged.sum()),
    )
    assert flag["recall"] == pytest.approx(tp / truth.sum())
    if flagged.any():
        precision = tp / flagged.sum()
        assert flag["precision"] == pytest.approx(precision)
        assert flag["f1"] == pytest.approx(2 * tp / (flagged.sum() + truth.sum()))
        low, high = flag["precision_ci"]
        assert low <= precision <= high

    assert checkpoint.threshold != SEED_THRESHOLD
    assert checkpoint.threshold == pytest.approx(expected, abs=2e-3)
    assert checkpoint.threshold_basis.startswith("KDE crossing")
    assert f"{flags.sum()} stereotypical vs {(~flags).sum()} other prompts" in (
        checkpoint.threshold_basis
    )
    assert f"snapshot {snapshot.pk}" in checkpoint.threshold_basis

    # the registry page shows the threshold with its basis
    staff = make_staff("boss")  # owns the default study, which the version was trained on
    client = Client()
    client.force_login(staff)
    html = client.get(reverse("dashboards:registry")).content.decode()
    assert f"{checkpoint.threshold:.3f}" in html
    assert escape(checkpoint.threshold_basis) in html
    assert f"Flag on {len(held)} held-out prompts: precision" in html
    out = io.StringIO()
    call_command("checkpoints", stdout=out)
    assert f"{flag['recall']:.2f}" in out.getvalue().splitlines()[1]

    # a seed .pth carries no threshold: its import says so instead of passing 0.12 off
    out = Path(training_storage["CHECKPOINT_DIR"]).parent / "v1.pth"
    exported = export_checkpoint(checkpoint, "seed", out)
    imported = import_checkpoint(exported, actor="test")
    assert imported.threshold == SEED_THRESHOLD
    assert imported.threshold_basis == (
        f"seed default {SEED_THRESHOLD}: imported from v1.pth, which carries no threshold"
    )

    # an import calibrated on the snapshot runs a run's own calibration: the same threshold
    call_command(
        "import_checkpoint",
        str(exported),
        "--calibrate-on",
        str(snapshot.pk),
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    recalibrated = Checkpoint.objects.order_by("-version").first()
    assert recalibrated.threshold == pytest.approx(checkpoint.threshold, abs=1e-6)
    assert recalibrated.threshold_basis.endswith(
        f"(snapshot {snapshot.pk}, train split, at import)"
    )
    assert recalibrated.metrics["flag"]["recall"] == pytest.approx(flag["recall"])

    # exported as the registry does (its model card beside the .pth): the import keeps the
    # version's own threshold, exactly, and says where it came from (issue 37)
    carded = card_export(checkpoint, "seed", out.with_name("carded.pth"))
    assert carded.with_suffix(".md").is_file()
    err = io.StringIO()
    call_command("import_checkpoint", str(carded), stdout=io.StringIO(), stderr=err)
    again = Checkpoint.objects.order_by("-version").first()
    assert again.threshold == checkpoint.threshold != SEED_THRESHOLD
    assert again.threshold_basis.endswith("from the model card beside it (carded.md)")
    assert f"threshold {checkpoint.threshold:g} (" in err.getvalue()
    # a card that shows only its rounded "Value:" line (an older export) still gives it
    card = carded.with_suffix(".md")
    card.write_text(re.sub(r"<!-- stereorank-threshold: .* -->\n", "", card.read_text()))
    assert "stereorank-threshold" not in card.read_text()
    older = import_checkpoint(carded, actor="test")
    assert older.threshold == pytest.approx(checkpoint.threshold, abs=5e-5)
    # --threshold wins over the card; a native folder takes none
    given = import_checkpoint(carded, actor="test", threshold=0.3)
    assert given.threshold == 0.3 and given.threshold_basis == "0.3: given at import of carded.pth"
    with pytest.raises(RegistryError, match="--threshold is for a seed .pth"):
        import_checkpoint(carded.parent, fmt="native", actor="test", threshold=0.3)


def test_a_run_that_cannot_be_calibrated_records_why(study, training_storage, monkeypatch):
    """Every prompt scored alike: no KDE can be fitted, and the checkpoint says so."""
    from training.ml.model import RewardModel

    monkeypatch.setattr(
        RewardModel, "score", lambda self, texts, cache=None, **kw: np.zeros(len(texts))
    )
    snapshot = create_snapshot(include_synthetic=True)
    run = start_run(snapshot, hyperparameters={**FAST, "epochs": 1}, enqueue=False)
    assert execute_run(run.pk, "node-a") == "done: v1"
    checkpoint = run.__class__.objects.get(pk=run.pk).checkpoint
    types = prompt_types(snapshot, "train")
    n_stereo = sum(t == "stereotypical" for t in types.values())
    assert checkpoint.threshold == SEED_THRESHOLD
    assert checkpoint.threshold_basis == (
        f"seed default {SEED_THRESHOLD}: each class needs at least two distinct scores for a "
        f"KDE ({n_stereo} stereotypical vs {len(types) - n_stereo} other "
        f"prompts) (snapshot {snapshot.pk}, train split)"
    )
    # the fallback is recorded with the flag's figures and shown where they are
    assert checkpoint.metrics["flag"]["calibration"] == "seed-default"
    out = io.StringIO()
    call_command("checkpoints", stdout=out)
    assert re.search(r" / (\d\.\d\d|n/a)\* ", out.getvalue().splitlines()[1])
