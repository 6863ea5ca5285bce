"""Promotion that sees every group: does a candidate lose some group's alignment against
the active version? Used by a schedule's ``auto`` promotion (``group_fields``) and by
``manage.py promote --check-groups``.

Both versions' perspective reports on the candidate's snapshot are computed where
missing (``perspectives.compute_reports``: stored once, reused after), then compared
group by group, paired over prompts (``perspectives.compare_versions``: the
difference candidate - active with a 95% bootstrap interval). Only groups with k or
more annotators have figures, so the check is k-anonymous like the report. A group
**falls** when its alignment drops by more than ``margin`` and the interval lies
wholly below zero (a clear loss, not noise): the point estimate says how much, the
interval that it is real.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from training.models import Checkpoint, DatasetSnapshot
from training.perspectives import services as perspectives

DEFAULT_MARGIN = 0.02


@dataclass(frozen=True)
class GroupLoss:
    """One group that falls: its field and name, both alignments, the paired difference."""

    field: str
    group: str
    alignment_new: float
    alignment_active: float
    diff: float
    ci: tuple[float, float]

    def describe(self, active_version: int) -> str:
        return (
            f"{self.field}={self.group} alignment {self.alignment_new:.3f} vs "
            f"{self.alignment_active:.3f} (version {active_version}), diff {self.diff:+.3f}, "
            f"95% CI [{self.ci[0]:+.3f}, {self.ci[1]:+.3f}]"
        )


def falls(row: dict, margin: float) -> bool:
    """A ``compare_versions`` row (new - active) that loses more than ``margin``, clearly."""
    ci = row.get("ci")
    return bool(ci) and row["diff"] < -margin and ci[1] < 0


def group_losses(
    candidate: Checkpoint,
    active: Checkpoint,
    snapshot: DatasetSnapshot,
    fields: Iterable[str] | None = None,
    margin: float = DEFAULT_MARGIN,
) -> tuple[list[str], list[GroupLoss]]:
    """``(fields checked, the groups that fall, worst first)``; the reports that are
    missing are computed here. ``fields`` None: every field the snapshot has.
    Refusals (an unknown field, no rankings) are ``PerspectiveError``s."""
    checked = perspectives.report_fields(snapshot, fields)
    for checkpoint in (candidate, active):
        perspectives.compute_reports(checkpoint, snapshot, checked)
    losses = []
    for field in checked:
        for row in perspectives.compare_versions(candidate, active, snapshot, field):
            if falls(row, margin):
                losses.append(
                    GroupLoss(
                        field,
                        row["group"],
                        row["alignment_a"],
                        row["alignment_b"],
                        row["diff"],
                        tuple(row["ci"]),
                    )
                )
    return checked, sorted(losses, key=lambda loss: loss.diff)


def verdict(checked: list[str], losses: list[GroupLoss], margin: float, active_version: int) -> str:
    """The decision's words: the worst group that falls (and how many others), or that
    none of the fields' groups does."""
    if not losses:
        return f"no group of {', '.join(checked)} falls by more than {margin:g}"
    more = f" (and {len(losses) - 1} more)" if len(losses) > 1 else ""
    return f"{losses[0].describe(active_version)} falls by more than {margin:g}{more}"
