"""Promotion that sees every group: does a candidate lose some group's alignment against
the active version? ``before_promotion`` is the check every promotion door runs (the
``promote`` command, the API, the registry page, a schedule: ``training.services.promote``),
on by default, over every demographic field; a schedule's ``group_fields`` also keeps a
version by the same rule before it tries to promote.

Not checked, and said so in the promotion's recorded reason: the first version (nothing
active to lose against), a version without a snapshot of its own (an imported one), and
every version where the installation turned the check off
(``STEREORANK_PROMOTION_GROUP_CHECK=false``).
A rollback (an incident) never runs the check. Forcing past it takes a reason, which is
recorded with the losses it overrode. A door that answers a request (the API, the page)
never computes reports in it: missing ones are queued and it answers "reports computing"
(409); the command and a schedule compute them.

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

from django.conf import settings

from training import selectors
from training.errors import GroupsFall, PerspectiveError, ReportsComputing, TrainingError
from training.models import Checkpoint, DatasetSnapshot
from training.perspectives import services as perspectives

DEFAULT_MARGIN = 0.02


def promotion_margin() -> float:
    """The loss of alignment a promotion may cost a group (``STEREORANK``, default 0.02)."""
    return float(settings.STEREORANK.get("PROMOTION_GROUP_MARGIN", DEFAULT_MARGIN))


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


def before_promotion(
    candidate: Checkpoint,
    *,
    compute: bool,
    force: bool = False,
    reason: str = "",
    margin: float | None = None,
) -> str:
    """The group check of a promotion of ``candidate`` (module doc): the words to record
    with it, or ``GroupsFall`` (unless ``force``, which needs a ``reason``) or
    ``ReportsComputing`` (``compute`` False and reports missing: they are queued)."""
    margin = promotion_margin() if margin is None else margin
    if force and not reason.strip():
        raise TrainingError("forcing a promotion past the group check needs a reason")
    if not settings.STEREORANK.get("PROMOTION_GROUP_CHECK", True):
        return "group check off (STEREORANK_PROMOTION_GROUP_CHECK=false)"
    active = selectors.active_checkpoint()
    if active is None:
        return "group check skipped: no version is active yet"
    if active.pk == candidate.pk:
        return ""
    snapshot = candidate.snapshot
    if snapshot is None:
        return f"group check skipped: v{candidate.version} has no snapshot of its own (imported)"
    try:
        fields = perspectives.report_fields(snapshot)
        if not fields:
            return f"group check skipped: snapshot {snapshot.pk} has no demographic field"
        missing = [
            c for c in (candidate, active) if selectors.perspectives_missing(c, snapshot, fields)
        ]
        if missing and not compute:
            if not selectors.rankings_behind(snapshot).exists():  # no report would ever come
                return f"group check skipped: no ranking of snapshot {snapshot.pk} counts today"
            for checkpoint in missing:
                perspectives.request_reports(checkpoint, snapshot, fields)
            names = " and ".join(f"v{c.version}" for c in missing)
            raise ReportsComputing(
                f"reports computing: the group check needs the perspective reports of {names} "
                f"on snapshot {snapshot.pk}; they are queued, try again in a minute"
            )
        checked, losses = group_losses(candidate, active, snapshot, fields, margin)
    except ReportsComputing:
        raise
    except PerspectiveError as error:  # e.g. no rankings count today (all withdrawn)
        return f"group check skipped: {error}"
    words = verdict(checked, losses, margin, active.version)
    if not losses:
        return words
    if force:
        return f"forced past the group check ({reason.strip()}): {words}"
    raise GroupsFall(f"v{candidate.version} not promoted: {words}")
