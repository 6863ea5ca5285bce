"""benchmarks/cuda_check.py's CPU-only part: it runs without Django, its figures are
right, a mismatch exits 1 naming it, and the image and the GPU worker can run it."""

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from scipy import stats

from training.ml import checkpoints
from training.ml.cache import EmbeddingCache
from training.ml.examples import data_hash
from training.ml.split import group_split
from training.ml.synthetic import synthetic_examples

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "cuda_check.py"
SIZE = {"occupations": 6, "prompts_per_type": 2, "variants": 1}
CPU_PART = [
    "--device", "cpu", "--epochs", "6",
    *(f"--{k.replace('_', '-')}={v}" for k, v in SIZE.items()),
]  # fmt: skip


@pytest.fixture(scope="module")
def cuda_check():
    spec = importlib.util.spec_from_file_location("cuda_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def test_the_cpu_part_runs_without_django_and_its_figures_hold(minilm, tmp_path):
    # Django made unimportable: a bare GPU machine may not have it.
    code = (
        "import runpy, sys; sys.modules['django'] = None; sys.argv = sys.argv[1:]; "
        "runpy.run_path(sys.argv[0], run_name='__main__')"
    )
    out = tmp_path / "out"
    argv = [sys.executable, "-c", code, str(SCRIPT), *CPU_PART, "--out", str(out)]
    result = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr
    assert "eval Spearman rho" in result.stdout  # the table
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    assert figures["ok"] is True and figures["mismatches"] == []
    assert (figures["reference"], figures["device"], figures["device_name"]) == ("cpu", "cpu", None)
    assert figures["float32_matmul_precision"] == "highest"

    # The same snapshot, rebuilt here: the script's split (0.2 of groups, seed 0).
    examples = synthetic_examples(SIZE["occupations"], SIZE["prompts_per_type"], SIZE["variants"])
    _, eval_set = group_split(examples, eval_fraction=0.2, seed=0)
    assert figures["snapshot"]["data_hash"] == data_hash(examples)
    assert figures["snapshot"]["eval"] == len(eval_set)

    # Its eval rho and flags, computed independently: the saved checkpoint's scores of
    # the eval texts (through the run's own embeddings) and scipy's Spearman.
    checkpoint = checkpoints.load(out / "reference" / "checkpoint", minilm)
    scores = checkpoint.to_model(minilm).score(
        [e.text for e in eval_set], cache=EmbeddingCache(out / "reference" / "embeddings")
    )
    rho = stats.spearmanr(scores, [e.label for e in eval_set]).statistic
    assert figures["rho"]["reference"] == pytest.approx(rho, abs=1e-9)
    assert 0.5 < rho <= 1  # the planted signal is learnt
    assert figures["threshold"]["reference"] == pytest.approx(checkpoint.threshold)
    assert figures["flagged"]["reference"] == int((scores < checkpoint.threshold).sum())

    # Both sides on the CPU: one deterministic computation, so exactly equal figures.
    assert figures["rho"]["device"] == figures["rho"]["reference"]
    assert figures["rho_diff"] == 0 and figures["flags_differ"] == 0
    assert figures["embedding_max_diff"] == 0
    n_groups = len({e.group for e in eval_set})
    assert figures["scores"]["prompts"] == 8 + n_groups  # the new prompts and eval originals
    assert figures["scores"]["max_diff"] == 0 and figures["scores"]["flags_differ"] == 0
    for side in ("reference", "device"):
        assert set(figures["seconds"][side]) == {"load", "encode", "train", "score"}
        assert all(s > 0 for s in figures["seconds"][side].values())


def test_a_forced_mismatch_exits_1_naming_it(cuda_check, capsys):
    # The device side's head shifted by 0.5: its scores differ by that, nothing else does.
    argv = [*CPU_PART, "--occupations=3", "--epochs=1", "--skew-bias=0.5"]
    assert cuda_check.main(argv) == 1
    out, err = capsys.readouterr()
    figures = json.loads(out.strip().splitlines()[-1])
    assert figures["ok"] is False
    assert figures["scores"]["max_diff"] == pytest.approx(0.5, abs=1e-6)
    assert figures["rho_diff"] == 0  # training agreed
    line = err.strip().splitlines()[-1]  # (the lines before: the log's)
    assert line.startswith("mismatch: scorer scores of ")
    assert "max |diff| 5.00e-01, tolerance 1e-04" in line
    assert "eval rho" not in line


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_no_cuda_is_one_line_and_exit_2(cuda_check, capsys):
    assert cuda_check.main([]) == 2  # --device cuda by default
    assert capsys.readouterr().err == ("error: device 'cuda' requested but CUDA is not available\n")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--occupations=0"], "error: at most 40 occupations"),
        (["--epochs=0"], "error: epochs=0 is out of range"),
        (["--score-atol=-1"], "error: --rho-atol and --score-atol must be >= 0"),
    ],
)
def test_bad_input_is_refused_before_any_work(cuda_check, capsys, argv, message):
    assert cuda_check.main([*CPU_PART, *argv]) == 2
    out, err = capsys.readouterr()
    assert err.startswith(message) and len(err.splitlines()) == 1
    assert out == ""  # nothing ran


def test_the_image_and_the_gpu_worker_can_run_it():
    """The image copies the script (past .dockerignore), on CUDA torch when built with
    TORCH_VARIANT, and worker-gpu shows it GPU 0, the script's default ``cuda``."""
    dockerfile = (REPO / "Dockerfile").read_text()
    assert re.search(r"^COPY benchmarks/cuda_check.py benchmarks/cuda_check.py$", dockerfile, re.M)
    assert re.search(r"^ARG TORCH_INDEX=\S+/\$\{TORCH_VARIANT\}$", dockerfile, re.M)
    ignored = (REPO / ".dockerignore").read_text().splitlines()
    assert ignored.index("!benchmarks/cuda_check.py") > ignored.index("benchmarks/*")
    assert "benchmarks" not in ignored
    gpu = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]["worker-gpu"]
    assert gpu["environment"]["CUDA_VISIBLE_DEVICES"] == "0"
    (device,) = gpu["deploy"]["resources"]["reservations"]["devices"]
    assert device["device_ids"] == ["0"] and "gpu" in device["capabilities"]
