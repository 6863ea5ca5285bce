"""The measurements of ``benchmarks/scale.py``: each child's one (snapshot, quality report,
the quality page and API, perspective report, exports; with peak memory), and next-task
and submit through the API in the parent (wall time, SQL statements, server CPU)."""

from __future__ import annotations

import os
import resource
import statistics
import time
from pathlib import Path


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ---- the children: one measurement each, in a fresh process ----------------------


def child(what: str, draws: int, size: int = 0) -> dict:
    before = rss_mb()
    start = time.perf_counter()
    out: dict = {}
    if what == "snapshot":
        from training.snapshots.services import create_snapshot

        out["examples"] = create_snapshot().example_count
    elif what == "quality":
        from annotation.models import QualityReport
        from annotation.quality import store as quality_store

        QualityReport.objects.all().delete()  # a reused database keeps the last one
        out["draws"] = draws
        out["n_rankings"] = quality_store.refresh(False, draws).report["n_rankings"]
    elif what == "perspective":
        out.update(perspective())
    elif what == "dashboard":
        out.update(dashboard_figures())
    elif what == "sampler":
        out.update(sampler())
    elif what == "validation":
        out.update(validation(size, draws))
    else:
        from annotation.rankings.exports import jsonl_lines, pair_rows, ranking_rows

        rows = ranking_rows() if what == "export_rankings" else pair_rows()
        out["lines"] = out["bytes"] = 0
        for line in jsonl_lines(rows):
            out["lines"] += 1
            out["bytes"] += len(line)
    return {**out, "seconds": time.perf_counter() - start, "peak_mb": rss_mb(), "base_mb": before}


def perspective() -> dict:
    """A version's perspective report as ``training.perspectives.services.compute_reports`` makes it
    on the default queue (the snapshot's rankings read once, then one report per
    demographic field of the snapshot, 1,000 draws each), with scores from a fixed function
    of the item: the encoder is left out."""
    from django.conf import settings

    from annotation.stats.records import group_of
    from training.ml.alignment import RankedList
    from training.ml.alignment_report import perspective_report
    from training.models import DatasetSnapshot
    from training.perspectives.services import report_fields, study_rankings

    snapshot = DatasetSnapshot.objects.latest("pk")
    fields = report_fields(snapshot)
    rankings, item_prompt, texts, eval_prompts = study_rankings(snapshot)
    scores = {item: (item % 13) / 13 for item in texts}
    groups = 0
    for field in fields:
        ranked = [
            RankedList(rid, annotator, tuple(order), group_of(demo or {}, field), occupation)
            for rid, annotator, order, demo, occupation in rankings
        ]
        report = perspective_report(
            ranked, item_prompt, scores, k=settings.STEREORANK["GROUP_K"], prompts=eval_prompts
        )
        groups += len(report.groups)
    return {"rankings": len(rankings), "fields": len(fields), "groups": groups}


SAMPLER_ENCODER = "all-MiniLM-L6-v2"


def sampler() -> dict:
    """The active sampler's job on the study (``update_priorities``, what the default
    queue's worker runs): a seeded random head on MiniLM registered on the latest
    snapshot once (no training: the job's cost does not depend on the weights), the
    items' embeddings cached first (timed apart: a deployment has them from training),
    then the job, timed alone."""
    import torch

    from annotation.assignment.selectors import sampler_inputs
    from annotation.models import Study
    from training.ml.checkpoints import Checkpoint as MLCheckpoint
    from training.ml.model import RewardModel
    from training.models import Checkpoint, DatasetSnapshot
    from training.registry.sampling import update_priorities
    from training.registry.services import register
    from training.snapshots.services import create_snapshot
    from training.storage import encoders

    study = Study.objects.get(slug="default")
    Study.objects.filter(pk=study.pk).update(sampler=Study.Sampler.ACTIVE)
    encoder = encoders.encoder(SAMPLER_ENCODER, device="cpu")
    if not Checkpoint.objects.exists():
        torch.manual_seed(0)
        files = MLCheckpoint.from_model(
            RewardModel(encoder).eval(),
            hyperparameters={"temperature": 0.5, "dropout": 0.1},
            data_hash="",
        )
        snapshot = DatasetSnapshot.objects.order_by("-pk").first()
        register(files, snapshot=snapshot or create_snapshot())
    start = time.perf_counter()
    encoders.embedding_cache().embed(encoder, list(sampler_inputs(study.pk).texts.values()))
    warm = time.perf_counter() - start
    start = time.perf_counter()
    update = update_priorities(study.pk)
    job = time.perf_counter() - start
    assert update.scored, update.basis
    return {"job_s": job, "encode_s": warm, "rankings": update.rankings, "scored": update.scored}


def validation(size: int, draws: int) -> dict:
    """The validation report (``validation_results.report``, what the command, the API and
    the page compute) of a blinded validation study of ``size`` rankings built beside the
    collection one on first use (``scale_build.build_validation``; its build timed apart)."""
    from scale_build import VALIDATION_SLUG, build_validation

    from annotation.models import Study
    from annotation.validation import results as validation_results

    out: dict = {}
    if not Study.objects.filter(slug=VALIDATION_SLUG).exists():
        start = time.perf_counter()
        out["built"] = build_validation(size)
        out["build_s"] = time.perf_counter() - start
    study = Study.objects.get(slug=VALIDATION_SLUG)
    start = time.perf_counter()
    report = validation_results.report(study, n_boot=draws)
    out["job_s"] = time.perf_counter() - start
    out.update(draws=draws, annotators=report["n_annotators"], welch_t=report["welch"]["t"])
    return out


# ---- the parent: API and dashboard in process -----------------------------------


def backend_cpu(connection) -> float:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(connection, call) -> tuple[object, dict]:
    from django.test.utils import CaptureQueriesContext

    cpu, db_cpu, start = time.process_time(), backend_cpu(connection), time.perf_counter()
    with CaptureQueriesContext(connection) as queries:
        result = call()
    wall = time.perf_counter() - start
    db = backend_cpu(connection) - db_cpu
    return result, {
        "ms": wall * 1000,
        "sql": len(queries),
        "cpu_ms": (time.process_time() - cpu + db) * 1000,
    }


def summary(samples: list[dict]) -> dict:
    ms = [s["ms"] for s in samples]
    q = statistics.quantiles(ms, n=20) if len(ms) > 1 else ms * 19
    return {
        "p50_ms": statistics.median(ms),
        "p95_ms": q[18],
        "sql": statistics.median(s["sql"] for s in samples),
        "cpu_ms": statistics.median(s["cpu_ms"] for s in samples),
    }


def api_figures(requests: int, bar) -> dict:
    from django.db import connection
    from rest_framework.test import APIClient

    from annotation.accounts import tokens
    from annotation.models import AnnotatorProfile

    profiles = list(AnnotatorProfile.objects.select_related("user").order_by("pk")[:requests])
    nexts, submits = [], []
    for profile in profiles:
        _, token = tokens.issue(profile.user)
        client = APIClient(HTTP_HOST="localhost", HTTP_AUTHORIZATION=f"Token {token}")
        response, figures = timed(connection, lambda c=client: c.post("/api/tasks/next/"))
        assert response.status_code == 200, response.content
        nexts.append(figures)
        task = response.json()
        order = [item["id"] for item in task["items"]][::-1]
        response, figures = timed(
            connection,
            lambda c=client, t=task, order=order: c.post(
                f"/api/tasks/{t['id']}/ranking/",
                {"order": order, "seconds_spent": 12},
                format="json",
            ),
        )
        assert response.status_code == 201, response.content
        submits.append(figures)
        bar.update(1)
    return {"next_task": summary(nexts), "submit": summary(submits)}


def dashboard_figures(tries: int = 10) -> dict:
    """The quality page and ``/api/staff/quality/`` served from the stored report (the
    first request of each is left out: it warms the process)."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django_otp import DEVICE_ID_SESSION_KEY
    from django_otp.plugins.otp_totp.models import TOTPDevice
    from rest_framework.test import APIClient

    from annotation.access import services as access
    from annotation.accounts import tokens
    from annotation.models import default_study

    staff, _ = get_user_model().objects.get_or_create(username="bench-staff", is_staff=True)
    # A researcher of the default study: staff see only the studies they have a role in
    # (without one, the page is the "no role" 403 of issue 37).
    access.grant(default_study(), staff.username, "researcher")
    page = Client(HTTP_HOST="localhost")
    page.force_login(staff)
    # force_login gives no second factor: the session is marked as having given it (as
    # django_otp.login does after a right code), with a confirmed app.
    app, _ = TOTPDevice.objects.get_or_create(
        user=staff, confirmed=True, defaults={"name": "benchmark"}
    )
    session = page.session
    session[DEVICE_ID_SESSION_KEY] = app.persistent_id
    session.save()
    _, token = tokens.issue(staff)
    api = APIClient(HTTP_HOST="localhost", HTTP_AUTHORIZATION=f"Token {token}")
    out = {}
    for name, client, url in (
        ("page", page, "/dashboards/quality/"),
        ("page_sorted", page, "/dashboards/quality/?sort=consensus_rho&dir=desc&page=3"),
        ("api", api, "/api/staff/quality/"),
    ):
        samples = []
        for _ in range(tries + 1):
            response, figures = timed(connection, lambda c=client, u=url: c.get(u))
            assert response.status_code == 200, (url, response.status_code)
            samples.append(figures)
        out[name] = {**summary(samples[1:]), "bytes": len(response.content)}
    out["p50_ms"], out["max_ms"] = out["page"]["p50_ms"], out["page"]["p95_ms"]
    return out
