"""The quality report stored, served and refreshed off the request.

A worker on the ``default`` queue computes a study's report (``annotation.quality_report``)
and stores it, keyed by the study, with the version of that study's data it describes
(``data_version``: its rankings, statuses, consents, gold and check tasks, the active
fields and the settings), so one study's rankings never move another's report. A page
or the staff API is served a study's stored report with the time it was computed;
when the data has moved on since, it is still served (marked stale) and a refresh is
queued once per version (stale while revalidate). Nothing is computed in a request;
``quality --json`` computes directly.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from datetime import datetime

from celery import current_app
from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import OuterRef, Subquery
from django.utils import timezone

from . import selectors, studies
from .models import AnnotatorProfile, StatusChange
from .report_models import QualityReport
from .study_models import Study

REFRESH_TASK = "annotation.tasks.refresh_quality_report"
# One refresh queued per kind and data version within this time (a lost one is retried).
REFRESH_LOCK_SECONDS = 10 * 60


def data_version(study: Study) -> str:
    """The version of everything the study's report reads: ``selectors.quality_data_version``
    of the study plus a hash of the active demographic fields and the settings."""
    fields = list(selectors.demographic_questions().values_list("key", flat=True))
    described = json.dumps([fields, settings.STEREORANK], sort_keys=True, default=str)
    digest = hashlib.sha256(described.encode()).hexdigest()[:12]
    return f"{selectors.quality_data_version(study)}-{digest}"


@dataclass(frozen=True)
class Served:
    """What a page or the API shows: the stored report (``None`` until one is computed),
    when it was computed, and whether the data has changed since (a refresh is queued)."""

    report: dict | None
    computed_at: datetime | None
    data_version: str | None
    stale: bool

    def as_dict(self) -> dict:
        """The report with ``computed_at``, ``data_version`` and ``stale`` beside it."""
        at = self.computed_at.isoformat() if self.computed_at else None
        meta = {"computed_at": at, "data_version": self.data_version, "stale": self.stale}
        return {**(self.report or {}), **meta}


def stored(study: Study, include_synthetic: bool, n_boot: int) -> QualityReport | None:
    """The study's stored report of that kind, if one was computed."""
    return QualityReport.objects.filter(
        study=study, include_synthetic=include_synthetic, n_boot=n_boot
    ).first()


def served_report(
    include_synthetic: bool, n_boot: int, *, study: Study | None = None, statuses: bool = True
) -> Served:
    """The study's (the default one unless given) stored report, never computed here; a
    refresh is queued when it is missing or describes older data. A stale report's
    annotator rows carry their current status (``current_statuses``) unless ``statuses``
    is false (a page that shows a few rows reads them for those rows only)."""
    study = study or studies.default_study()
    version = data_version(study)
    row = stored(study, include_synthetic, n_boot)
    fresh = row is not None and row.data_version == version
    if not fresh:
        queue_refresh(study, include_synthetic, n_boot, version)
    if row is None:
        return Served(None, None, None, True)
    report = row.report
    if not fresh and statuses:
        report = {**report, "annotators": current_statuses(report.get("annotators", []))}
    return Served(report, row.computed_at, row.data_version, not fresh)


def current_statuses(rows: list[dict]) -> list[dict]:
    """A stale report's annotator rows with each annotator's status as it is now (one
    query): a reinstatement shows at once, the figures wait for the refresh."""
    now = {
        p["pk"]: p
        for p in AnnotatorProfile.objects.filter(pk__in=[r["profile"] for r in rows])
        .annotate(
            last_reason=Subquery(
                StatusChange.objects.filter(annotator=OuterRef("pk"))
                .order_by("-id")
                .values("reason")[:1]
            )
        )
        .values("pk", "status", "last_reason")
    }
    current = []
    for r in rows:
        p = now.get(r["profile"])
        if p is not None:
            r = {**r, "status": p["status"], "status_reason": p["last_reason"] or ""}
        current.append(r)
    return current


def queue_refresh(study: Study, include_synthetic: bool, n_boot: int, version: str) -> None:
    """Queue ``refresh`` on the default queue once the caller's transaction commits, once
    per study, kind and data version (a cache lock; it expires, so a lost task is queued again)."""

    def send() -> None:
        key = f"quality-refresh:{study.pk}:{int(include_synthetic)}:{n_boot}:{version}"
        if cache.add(key, 1, REFRESH_LOCK_SECONDS):
            args = (include_synthetic, n_boot, study.pk)
            signature = current_app.signature(REFRESH_TASK, args)
            signature.apply_async()

    transaction.on_commit(send)


def refresh(include_synthetic: bool, n_boot: int, study: Study | None = None) -> QualityReport:
    """Compute and store the study's (the default one unless given) report unless the
    stored one already describes its data (idempotent: a task delivered twice computes
    once). The version is read before computing, so data that changes
    meanwhile makes the stored report stale again."""
    from .quality_report import quality_report  # scipy and krippendorff: only here

    study = study or studies.default_study()
    version = data_version(study)
    row = stored(study, include_synthetic, n_boot)
    if row is not None and row.data_version == version:
        return row
    start = time.perf_counter()
    report = quality_report(include_synthetic, n_boot=n_boot, study=study)
    row, _ = QualityReport.objects.update_or_create(
        study=study,
        include_synthetic=include_synthetic,
        n_boot=n_boot,
        defaults={
            "data_version": version,
            "computed_at": timezone.now(),
            "seconds": time.perf_counter() - start,
            "report": report,
        },
    )
    return row


def forget_all() -> None:
    """Delete every stored report (an erasure: they name annotators by pseudonym)."""
    QualityReport.objects.all().delete()
