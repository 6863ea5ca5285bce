import json
import re
import subprocess
import sys
from pathlib import Path

import torch

from training.ml.__main__ import main
from training.ml.synthetic import synthetic_examples

REPO = Path(__file__).resolve().parents[2]


def _write_data(path: Path) -> Path:
    rows = synthetic_examples(n_occupations=3, prompts_per_type=2, variants=2)
    path.write_text("\n".join(json.dumps(e.__dict__) for e in rows) + "\n")
    return path


def test_train_score_export(minilm, tmp_path, capsys):
    data = _write_data(tmp_path / "d.jsonl")
    out = tmp_path / "ckpt"
    argv = ["train", "--data", str(data), "--encoder", "all-MiniLM-L6-v2", "--out", str(out)]
    cache = tmp_path / "cache"
    # the shared options work after the command as well as before it
    extra = ["--epochs", "2", "--lr", "0.01", "--n-boot", "20", "--device", "cpu"]
    assert main([*argv, *extra, "--cache-dir", str(cache)]) == 0
    assert "epoch 2/2" in capsys.readouterr().out
    assert list(cache.glob("*/*.emb"))  # the embedding cache wrote its shard
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["hyperparameters"]["epochs"] == 2 and manifest["extra"]["threshold_method"]

    assert (
        main(["--device", "cpu", "score", "--checkpoint", str(out), "a CEO", "an elderly nurse"])
        == 0
    )
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 and lines[0].endswith("\ta CEO")
    float(lines[0].split("\t")[0])

    pth = tmp_path / "seed.pth"
    assert main(["export-seed", "--checkpoint", str(out), "--out", str(pth)]) == 0
    assert "fc.weight" in torch.load(pth)

    # a second train into the same directory is refused before training, with one line
    assert main([*argv, "--epochs", "1"]) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith("error: ") and "already exists" in captured.err
    assert "epoch" not in captured.out


def test_errors_exit_non_zero_with_one_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "x"}\n')
    good = _write_data(tmp_path / "good.jsonl")
    for args, why in (
        (["train", "--data", str(bad), "--encoder", "x", "--out", str(tmp_path / "o")], "label"),
        (
            ["train", "--data", str(good), "--encoder", "x", "--out", str(tmp_path / "o")]
            + ["--temperature", "0"],
            "temperature",
        ),
        (["score", "--checkpoint", str(tmp_path / "missing"), "a prompt"], "not a checkpoint"),
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "training.ml", *args], cwd=REPO, capture_output=True, text=True
        )
        assert proc.returncode == 1, proc.stderr
        assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: ")
        assert "Traceback" not in proc.stderr and why in proc.stderr


def test_no_django_below_training_ml():
    code = (
        "import sys, training.ml.__main__, training.ml.checkpoints; print('django' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert proc.stdout.strip() == "False", proc.stderr
    for path in (REPO / "training" / "ml").rglob("*.py"):
        assert not re.search(r"^\s*(from|import)\s+django", path.read_text(), re.M), path
