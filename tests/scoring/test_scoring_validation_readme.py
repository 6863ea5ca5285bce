"""The README's validation path, command for command, on placeholder images (issue 17):
the active version's flagged prompts as written and optimised, blinded tasks, synthetic
annotators with a planted preference, the report (its JSON recomputed with scipy) and the
version's model card carrying the result."""

import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from scipy import stats

from annotation.catalogue.loading import load_catalogue

pytestmark = pytest.mark.slow
README = Path(__file__).resolve().parents[2] / "README.md"


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def readme_commands() -> list[list[str]]:
    """The README's validation block: the ``python manage.py`` lines after ``create_study``."""
    text = README.read_text()
    block = text[text.index("python manage.py create_study val --kind validation") :]
    block = block[: block.index("```")]
    return [
        re.split(r"\s+", line.split("#")[0].strip())[2:]
        for line in block.splitlines()
        if line.startswith("python manage.py")
    ]


def test_the_readmes_validation_path(
    transactional_db, media_root, diversity_version, tmp_path, settings
):
    settings.STEREORANK = {**settings.STEREORANK, "QUALITY_N_BOOT": 200}
    load_catalogue()
    commands = readme_commands()
    assert [c[0] for c in commands] == [
        "create_study",
        "consent",
        "study_status",
        "simulate_annotators",
        "validation_report",
        "validation_report",
        "model_card",
    ]
    outputs = []
    for args in commands:
        if args[0] == "model_card":
            args = ["model_card", str(diversity_version.version), "--out", str(tmp_path / "c.md")]
        outputs.append(run(*args))
    report = json.loads(outputs[5])
    assert report["n_annotators"] == 20 and report["k_items"] == 6
    orig = np.array([a["mean_rank"]["original"] for a in report["annotators"]])
    opt = np.array([a["mean_rank"]["optimised"] for a in report["annotators"]])
    welch = stats.ttest_ind(opt, orig, equal_var=False)
    paired = stats.ttest_rel(opt, orig)
    wilcoxon = stats.wilcoxon(opt, orig)
    assert report["welch"]["t"] == pytest.approx(welch.statistic)
    assert report["welch"]["df"] == pytest.approx(welch.df)
    assert report["paired_t"]["p"] == pytest.approx(paired.pvalue)
    assert report["wilcoxon"]["p"] == pytest.approx(wilcoxon.pvalue)
    assert report["paired_t"]["difference"] > 0 and report["paired_t"]["p"] < 0.05
    assert report["welch"]["text"] in outputs[4]
    card = (tmp_path / "c.md").read_text()
    assert f"Welch's t-test, {report['welch']['text']}" in card
