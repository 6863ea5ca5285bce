"""Every shell block of the README runs as written (issue 37), read from the README itself so
that the two cannot drift: on a database set up as ``bin/run`` sets it up (its own
``manage.py`` lines, read from bin/run), each block in the README's order, each command
through Django's ``call_command`` with the block's own arguments. A block this cannot run
(compose, long-running processes, a live server, PyPI) carries a marker saying why
(``tests/readme_blocks.py``).

Deliberate differences from a terminal after ``bin/run``: the worker's tasks run in this
process as they are sent (Celery's eager mode: ``--wait`` returns once they ran), and the
training blocks run on the small test encoder (MiniLM), not the seed's mpnet. The figures the
blocks print are checked against independent computations (scipy on the stored predictions,
on the validation report's own per-annotator means)."""

from __future__ import annotations

import io
import json
import re
import shlex
import time
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest
from crowd_fakes import join
from django.core.management import call_command
from django.core.management.color import no_style
from django.db import connection
from django.test import Client
from django.urls import reverse
from scipy import stats
from scipy.stats import spearmanr
from training_study import embedding_cache, training_storage  # noqa: F401

from annotation.access.models import StudyMembership
from annotation.assignment.next_task import next_task
from annotation.models import Ranking, Study
from annotation.models.studies import Participation
from annotation.participants import services
from scoring.scorer import reset_scorer
from tests.broker import point_broker
from tests.readme_blocks import README, blocks, steps
from training.models import Augmentation, Checkpoint, DatasetSnapshot, Evaluation, TrainingRun
from training.snapshots.services import EVAL, rows_of
from web.celery import app

pytestmark = pytest.mark.slow
BIN_RUN = README.parent / "bin" / "run"
PLAIN = "A photo of a nurse"
DIVERSE = "A nurse, an older Sikh man in a turban, at work"


def bin_run_commands() -> list[list[str]]:
    """bin/run's ``$py manage.py`` lines before its ``runserver``, the admin's password a
    literal."""
    commands = []
    for line in BIN_RUN.read_text().splitlines():
        line = line.strip().replace('"$(cat "$var/admin-password")"', "readme-admin-password")
        if line.startswith("$py manage.py "):
            commands.append(shlex.split(line.split(" | ")[0])[2:])
    assert commands[-1][0] == "runserver", "bin/run no longer ends by serving"
    return commands[:-1]
    return commands


def manage(argv: list[str]) -> str:
    out = io.StringIO()
    call_command(*argv, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@pytest.fixture
def eager_worker():
    """The worker's part, in this process as each task is sent; a task's error is raised.
    Every task module is imported first, as a worker's boot does, so that no task sent by
    name goes to a broker instead."""
    app.loader.import_default_modules()
    # fresh connection and producer pools (an earlier test in this process may have closed
    # the ones kombu keeps for this broker: "Acquire on closed pool" on the first send)
    point_broker(app.conf.broker_url, app.conf.broker_transport_options)
    before = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager = app.conf.task_eager_propagates = True
    reset_scorer()
    yield
    app.conf.task_always_eager, app.conf.task_eager_propagates = before
    reset_scorer()


def test_the_parser_reads_markers_continuations_heredocs_and_chains():
    text = (
        "<!-- readme-test: skip: a reason -->\n```sh\nbin/run\n```\n\n```sh\n"
        "python manage.py a --x 1 \\\n  --y 'two words'   # a comment\n"
        "cat > f.json <<'EOF'\n{\"k\": 1}\nEOF\npython manage.py b && python manage.py c\n```\n"
    )
    skipped, run = blocks(text)
    assert skipped.skip == "a reason" and skipped.steps == []
    assert run.skip is None and run.steps == [
        ("manage", ["a", "--x", "1", "--y", "two words"]),
        ("file", "f.json", '{"k": 1}\n'),
        ("manage", ["b"]),
        ("manage", ["c"]),
    ]
    with pytest.raises(ValueError, match="is not `python manage.py"):
        steps("curl http://x/")


def test_every_block_is_run_or_says_why_not():
    found = blocks()
    assert all(b.skip or b.steps for b in found)
    skipped = [b.line for b in found if b.skip]
    # Six, each saying why: the two commands, a container engine, long-running processes,
    # a running server, PyPI, and Prolific's paid API (tests/crowd/ runs it against a fake).
    assert len(skipped) <= 6, f"blocks skipped at lines {skipped}: run them or say why here"


def ids_from_one(*models) -> None:
    """The README names ids (``--snapshot 1``): on a fresh bin/run the first is 1. These
    tables are empty here, but PostgreSQL's sequences count on across tests; restart them.
    (pytest-django's ``reset_sequences`` restarts every table's, under the default study
    that migrate made.)"""
    assert not any(m.objects.exists() for m in models)
    tables = [{"table": m._meta.db_table, "column": "id"} for m in models]
    with connection.cursor() as cursor:
        for sql in connection.ops.sequence_reset_by_name_sql(no_style(), tables):
            cursor.execute(sql)


def test_every_readme_block_runs_as_written(
    transactional_db, eager_worker, tmp_path, monkeypatch, settings
):
    ids_from_one(DatasetSnapshot, Augmentation, TrainingRun)
    settings.STEREORANK = {**settings.STEREORANK, "QUALITY_N_BOOT": 200, "ANNOTATOR_QUOTA": 1}
    monkeypatch.chdir(tmp_path)
    for argv in bin_run_commands():
        manage(argv)
    outputs: dict[str, list[str]] = {}
    for block in blocks():
        if block.skip:
            continue
        for step in block.steps:
            if step[0] == "file":
                Path(step[1]).write_text(step[2])
                continue
            argv = step[1]
            started = time.perf_counter()
            outputs.setdefault(argv[0], []).append(manage(argv))
            print(f"{time.perf_counter() - started:6.2f}s {shlex.join(argv)[:80]}")
    check_training(outputs)
    check_validation(outputs, tmp_path)
    check_scoring(outputs)
    check_prolific_walk()
    check_best_worst(outputs)
    check_group_heads(outputs)
    assert "lab" in outputs["create_annotator"][-1]
    assert "wave-2" in outputs["access_log"][0] or outputs["access_log"][0] == ""


def check_training(outputs: dict[str, list[str]]) -> None:
    """Versions 1 to 3 differ, beat the seed recipe (issue 21), on scipy's rho."""
    snapshot = DatasetSnapshot.objects.get(pk=int(outputs["snapshot"][0]))
    rows = {r["key"]: r["label"] for r in rows_of(snapshot, EVAL)}
    rho = {}
    for version in Checkpoint.objects.filter(version__in=(1, 2, 3)).order_by("version"):
        predictions = Evaluation.objects.get(checkpoint=version, snapshot=snapshot).predictions
        keys = sorted(predictions)
        expected = spearmanr([predictions[k] for k in keys], [rows[k] for k in keys]).statistic
        assert version.metrics["spearman"] == pytest.approx(expected, abs=1e-9)
        rho[version.version] = expected
    print("eval rho:", {f"v{v}": round(r, 3) for v, r in rho.items()})
    assert Checkpoint.objects.get(version=3).hyperparameters["recipe"] == "seed"
    assert rho[1] > rho[3] + 0.1 and rho[2] > rho[3] + 0.1 and rho[1] != rho[2], rho
    diff = re.search(
        r"diff \(v1 - v2\): ([+-][0-9.]+), 95% CI \[([+-][0-9.]+), ([+-][0-9.]+)\]",
        outputs["compare"][0],
    )
    assert diff and (diff.group(2), diff.group(3)) != ("+0.000", "+0.000"), outputs["compare"]
    imported = Checkpoint.objects.get(version=4)
    v1 = Checkpoint.objects.get(version=1)
    assert imported.run_id is None and imported.threshold == v1.threshold  # the card's


def check_validation(outputs: dict[str, list[str]], folder: Path) -> None:
    """The report's tests are scipy's on its own per-annotator means; the card carries it."""
    report = json.loads(outputs["validation_report"][1])
    assert report["n_annotators"] == 20 and report["k_items"] == 6
    orig = np.array([a["mean_rank"]["original"] for a in report["annotators"]])
    opt = np.array([a["mean_rank"]["optimised"] for a in report["annotators"]])
    welch = stats.ttest_ind(opt, orig, equal_var=False)
    assert report["welch"]["t"] == pytest.approx(welch.statistic)
    assert report["welch"]["df"] == pytest.approx(welch.df)
    assert report["paired_t"]["p"] == pytest.approx(stats.ttest_rel(opt, orig).pvalue)
    assert report["wilcoxon"]["p"] == pytest.approx(stats.wilcoxon(opt, orig).pvalue)
    assert report["paired_t"]["difference"] > 0 and report["paired_t"]["p"] < 0.05
    assert report["welch"]["text"] in outputs["validation_report"][0]
    card = (folder / "v1-card.md").read_text()
    assert f"Welch's t-test, {report['welch']['text']}" in card


def check_scoring(outputs: dict[str, list[str]]) -> None:
    """With v1 active, the diverse nurse scores above the plain one."""
    scored = outputs["score"][0].splitlines()
    scores = {line[25:].strip(): float(line.split()[0]) for line in scored[1:]}
    assert scores[DIVERSE] > scores[PLAIN], scored


def check_best_worst(outputs: dict[str, list[str]]) -> None:
    """The best-worst study: its answers are best-worst tiers, its quality report gives a
    split-half reliability with an interval, v5 trained on its labels, v1 active again."""
    from annotation.stats.tiers import of_ranking

    rankings = Ranking.objects.filter(task__study__slug="faces", task__check_item=None)
    shapes = {tuple(len(t) for t in of_ranking(r.order, r.tiers)) for r in rankings}
    assert shapes == {(1, 2, 1)}, shapes
    report = next(o for o in outputs["quality"] if "split-half" in o and "best_worst" in o)
    assert re.search(r"split-half \(S-B\)\s+0\.\d+ \[", report), report
    assert Checkpoint.objects.get(version=5).snapshot_id == 2
    active = Checkpoint.objects.get(status=Checkpoint.Status.ACTIVE)
    assert active.version == 1


def check_group_heads(outputs: dict[str, list[str]]) -> None:
    """v6 has a head per age group and a disagreement head; its JSON scores carry the
    disagreement (the spread head's own, recomputed here); the group's score is the pooled
    one plus that group's offset; v1 is active again."""
    from training.storage import encoders
    from training.storage.encoders import load_model

    v6 = Checkpoint.objects.get(version=6)
    assert v6.hyperparameters["steering"] == {"kind": "group_heads", "field": "age_band"}
    body = next(json.loads(o) for o in outputs["score"] if o.startswith("{"))
    assert body["version"] == 6, body
    model = load_model(v6)
    texts = [r["prompt"] for r in body["results"]]
    emb = model.embed(texts, encoders.embedding_cache())
    np.testing.assert_allclose(
        [r["disagreement"] for r in body["results"]], model.groups.disagreement(emb), rtol=1e-4
    )
    grouped = next(o for o in outputs["score"] if "the head of age_band:45-54" in o)
    value = float(grouped.splitlines()[1].split()[0])
    one = model.embed(texts[1:], encoders.embedding_cache())
    expected = (
        model.score_embeddings(one)[0]
        + model.groups.offsets_for(one)[model.groups.index("45-54")][0]
    )
    assert value == pytest.approx(float(expected), abs=1e-4)
    assert Checkpoint.objects.get(status=Checkpoint.Status.ACTIVE).version == 1


def check_prolific_walk() -> None:
    """The README's walk: its entry link, agreeing, ranking, the end page's code and link."""
    text = README.read_text()
    link = re.search(r"`(http://127\.0\.0\.1:8000/join/wave-2/\?PROLIFIC_PID=[^`]+)`", text)
    back = re.search(r"`(https://app\.prolific\.com/submissions/complete\?cc=(\w+))`", text)
    assert link and back, "the README's Prolific walk is gone"
    study = Study.objects.get(slug="wave-2")
    owner = StudyMembership.objects.get(study=study, user__username="admin")
    assert owner.role == "owner"  # --owner: no separate grant
    url = urlsplit(link.group(1))
    browser = Client()
    assert join(browser, f"{url.path}?{url.query}").status_code == 302
    profile = Participation.objects.get(study=study).annotator
    assignment = next_task(profile)
    services.submit_ranking(profile, assignment.task_id, assignment.shown_order)
    page = browser.get(reverse("portal:complete"))
    assert page.status_code == 200 and back.group(2) in page.content.decode()
    assert back.group(1) in page.content.decode()
