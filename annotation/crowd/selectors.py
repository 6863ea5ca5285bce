"""Reads of a study's crowd-platform records, for the pages that show them: the platform
study, its ledger (newest first) and its bulk payments; the dashboard shows them to the
study's owners only."""

from dataclasses import dataclass

from annotation.crowd.models import BulkPayment, LedgerEntry, PlatformStudy
from annotation.models import Study


@dataclass
class Ledger:
    platform: PlatformStudy | None
    entries: list[LedgerEntry]
    payments: list[BulkPayment]
    counts: dict[str, int]

    @property
    def empty(self) -> bool:
        return self.platform is None and not self.entries


def ledger(study: Study, limit: int = 100) -> Ledger:
    """The study's platform record, its newest ``limit`` ledger entries and its payments."""
    entries = list(
        LedgerEntry.objects.filter(study=study)
        .select_related("payment", "by")
        .order_by("-pk")[:limit]
    )
    counts = {kind: 0 for kind in LedgerEntry.Kind.values}
    for kind in LedgerEntry.objects.filter(study=study).values_list("kind", flat=True):
        counts[kind] += 1
    return Ledger(
        platform=PlatformStudy.objects.filter(study=study).first(),
        entries=entries,
        payments=list(BulkPayment.objects.filter(study=study).order_by("-pk")[:20]),
        counts=counts,
    )
