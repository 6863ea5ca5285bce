"""The quality report stored, served and refreshed off the request.

A worker on the ``default`` queue computes a study's report (``annotation.quality.report``)
and stores it, keyed by the study, with the version of that study's data it describes
(``data_version``: its rankings, statuses, consents, gold and check tasks, the active
fields and the settings), so one study's rankings never move another's report. A page
or the staff API is served a study's stored report with the time it was computed;
when the data has moved on since, it is still served (marked stale) and a refresh is
queued once per version (stale while revalidate). Nothing is computed in a request;
``quality --json`` computes directly.

What a view reads does not grow with the study: the data version is a handful of index
probes and counts over annotators (``quality_selectors.quality_data_version``), and the annotator
table is stored as rows of its own (``QualityAnnotatorRow``), so a view reads the page of
them it shows, sorted in SQL, not every annotator's.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.core.cache import cache
from django.core.paginator import Page, Paginator
from django.db import transaction
from django.db.models import F, OuterRef, Subquery
from django.utils import timezone
from redis.exceptions import RedisError

from annotation.models import AnnotatorProfile, StatusChange, default_study
from annotation.models.reports import QualityAnnotatorRow, QualityReport
from annotation.models.studies import Study
from annotation.quality import selectors as quality_selectors
from annotation.rankings import selectors
from core.queue import after_commit

REFRESH_TASK = "annotation.tasks.refresh_quality_report"
# One refresh queued per kind and data version within this time (a lost one is retried).
REFRESH_LOCK_SECONDS = 10 * 60
# Annotator rows a page of the dashboard or the API shows.
PAGE_SIZE = 100
# The annotator table's sortable columns (``pseudonym``: the rows' stored order).
SORTABLE = (
    "pseudonym",
    "tasks",
    "gold_score",
    "check_pass_rate",
    "consensus_rho",
    "median_seconds",
    "untouched_rate",
    "status",
)


# The stored report's shape: a report stored in an older one is never served (its groups
# under k were named then), and its data version no longer matches, so it is recomputed.
REPORT_FORMAT = 2


def data_version(study: Study) -> str:
    """The version of everything the study's report reads:
    ``quality_selectors.quality_data_version`` of the study plus a hash of the active
    demographic fields, the settings and ``REPORT_FORMAT``."""
    fields = list(selectors.demographic_questions().values_list("key", flat=True))
    described = json.dumps(
        [fields, settings.STEREORANK, REPORT_FORMAT], sort_keys=True, default=str
    )
    digest = hashlib.sha256(described.encode()).hexdigest()[:12]
    return f"{quality_selectors.quality_data_version(study)}-{digest}"


@dataclass(frozen=True)
class Served:
    """What a page or the API shows: the stored report's figures (``None`` until one is
    computed; its annotator rows are read a page at a time, ``annotator_page``), when it
    was computed, and whether the data has changed since (a refresh is queued)."""

    report: dict | None
    computed_at: datetime | None
    data_version: str | None
    stale: bool
    stored: QualityReport | None = None

    def annotator_page(
        self, number: int | str | None = 1, column: str = "pseudonym", descending: bool = False
    ) -> Page:
        """One page of ``PAGE_SIZE`` annotator rows sorted by ``column`` (one of
        ``SORTABLE``, else pseudonym; undefined figures last, ties in pseudonym order). A
        stale report's rows carry each annotator's status as it is now."""
        rows = QualityAnnotatorRow.objects.filter(report=self.stored)
        if column in SORTABLE and column != "pseudonym":
            key = F(column).desc(nulls_last=True) if descending else F(column).asc(nulls_last=True)
            rows = rows.order_by(key, "position")
        else:
            rows = rows.order_by("-position" if descending else "position")
        page = Paginator(rows.values_list("row", flat=True), PAGE_SIZE).get_page(number)
        shown = list(page.object_list)
        page.object_list = current_statuses(shown) if self.stale else shown
        return page

    def as_dict(self, page: Page | None = None) -> dict:
        """The report with ``computed_at``, ``data_version`` and ``stale`` beside it, and the
        annotator rows of ``page`` (``annotator_page``: the first when not given) with
        ``annotators_page``, ``annotators_pages`` and ``annotators_count``."""
        at = self.computed_at.isoformat() if self.computed_at else None
        meta = {"computed_at": at, "data_version": self.data_version, "stale": self.stale}
        if self.stored is None:
            return {**(self.report or {}), **meta}
        page = page or self.annotator_page()
        rows = {
            "annotators": list(page.object_list),
            "annotators_page": page.number,
            "annotators_pages": page.paginator.num_pages,
            "annotators_count": page.paginator.count,
        }
        return {**self.report, **rows, **meta}


def stored(study: Study, include_synthetic: bool, n_boot: int) -> QualityReport | None:
    """The study's stored report of that kind, if one was computed."""
    return QualityReport.objects.filter(
        study=study, include_synthetic=include_synthetic, n_boot=n_boot
    ).first()


def servable(report: dict) -> bool:
    """Whether a stored report may be shown: of this ``REPORT_FORMAT`` (an older one named
    its groups under k), and computed with a k no smaller than today's
    (``STEREORANK_GROUP_K`` raised since: groups it kept may be under k now)."""
    agreement = report.get("agreement", {})
    k = int(settings.STEREORANK["GROUP_K"])
    return "hidden_groups" in agreement and agreement.get("k", 0) >= k


def served_report(include_synthetic: bool, n_boot: int, *, study: Study | None = None) -> Served:
    """The study's (the default one unless given) stored report, never computed here; a
    refresh is queued when it is missing or describes older data."""
    study = study or default_study()
    version = data_version(study)
    row = stored(study, include_synthetic, n_boot)
    if row is not None and not servable(row.report):
        row = None  # computed again, as the data version says (it moved on)
    fresh = row is not None and row.data_version == version
    if not fresh:
        queue_refresh(study, include_synthetic, n_boot, version)
    if row is None:
        return Served(None, None, None, True)
    return Served(row.report, row.computed_at, row.data_version, not fresh, row)


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
    """Queue ``refresh`` on the default queue once the caller's transaction commits
    (through the outbox), once per study, kind and data version (a cache lock; it expires,
    so a refresh is queued again; with the cache down, every request queues one: the task
    is idempotent)."""
    key = f"quality-refresh:{study.pk}:{int(include_synthetic)}:{n_boot}:{version}"
    try:
        first = cache.add(key, 1, REFRESH_LOCK_SECONDS)
    except (RedisError, OSError):  # the cache unreachable: queue anyway
        first = True
    if first:
        after_commit(REFRESH_TASK, include_synthetic, n_boot, study.pk)


def refresh(include_synthetic: bool, n_boot: int, study: Study | None = None) -> QualityReport:
    """Compute and store the study's (the default one unless given) report unless the
    stored one already describes its data (idempotent: a task delivered twice computes
    once). The version is read before computing, so data that changes
    meanwhile makes the stored report stale again."""
    from annotation.quality.report import quality_report  # scipy and krippendorff: only here

    study = study or default_study()
    version = data_version(study)
    row = stored(study, include_synthetic, n_boot)
    if row is not None and row.data_version == version:
        return row
    start = time.perf_counter()
    report = quality_report(include_synthetic, n_boot=n_boot, study=study)
    annotators = report.pop("annotators")
    with transaction.atomic():
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
        row.rows.all().delete()
        QualityAnnotatorRow.objects.bulk_create(
            (annotator_row(row, n, a) for n, a in enumerate(annotators)), batch_size=2000
        )
    return row


def annotator_row(report: QualityReport, position: int, row: dict) -> QualityAnnotatorRow:
    """One stored row of the report's annotator table (``row``: in pseudonym order)."""
    columns = {c: row[c] for c in SORTABLE if c != "pseudonym"}
    return QualityAnnotatorRow(report=report, position=position, row=row, **columns)


def forget_all() -> None:
    """Delete every stored report (an erasure: they name annotators by pseudonym)."""
    QualityReport.objects.all().delete()
