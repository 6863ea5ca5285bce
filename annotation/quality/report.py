"""The quality report, one home for the ``quality`` command, the staff API and the dashboard;
of one study (the default one unless given).

It reads the database through the selectors and computes with the Django-free
``annotation.stats`` library; the result is plain JSON (NaN as ``None``):

* ``agreement``: ``breakdown.breakdown`` over the rankings that count (check
  cards dropped): overall, per occupation, within and between the groups of each
  active demographic field (groups under ``GROUP_K`` annotators hidden, only counted).
* ``position_bias``: per task size K, over the same rankings.
* ``split_half`` and ``time_on_task``: reliability and time per answer, for every format.
* ``item_scores``: how far a Bradley-Terry fit over the answers' pairs moves the items
  from the counting score the labels are (``pair_fit.against_counting``); for every format
  but ``rank``, whose counting score is the Borda count and moved no head's eval rho in
  ``benchmarks/formats.py``, so a strict study's report (measured at 100,000 rankings) is
  spared the fit's seconds.
* ``annotators``: one row per annotator with consenting rankings: the figures
  the policy reads (since their last reinstatement, gold tasks included), their
  leave-one-out consensus rho against the annotators who count (on shared
  ordinary tasks, check cards dropped), and their status with its last reason.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Iterable, Mapping

from django.conf import settings

from annotation.models import AnnotatorStatus, Study
from annotation.models.studies import default_study
from annotation.quality import selectors as quality_selectors
from annotation.quality import standing
from annotation.rankings import selectors
from annotation.rankings.exports import pseudonym
from annotation.stats.agreement import Reliability, annotator_reliability
from annotation.stats.breakdown import breakdown
from annotation.stats.gold import AttentionCheck, annotator_quality
from annotation.stats.pair_fit import against_counting
from annotation.stats.position_bias import position_bias
from annotation.stats.records import RankingRecord
from annotation.stats.split_half import split_half
from annotation.stats.tiers import flatten, without
from core.json import json_safe
from core.languages import GROUPING

ANNOTATOR_COLUMNS = (
    "pseudonym",
    "tasks",
    "gold_tasks",
    "gold_score",
    "checks",
    "check_pass_rate",
    "consensus_rho",
    "median_seconds",
    "untouched_rate",
    "status",
)


def without_check_cards(
    records: Iterable[RankingRecord], checks: Mapping[int, AttentionCheck]
) -> list[RankingRecord]:
    """The records with each attention-check card taken out of order and shown order
    (the card's place was instructed, so it says nothing about agreement or bias)."""
    out = []
    for r in records:
        check = checks.get(r.task_id)
        if check is None:
            out.append(r)
            continue
        tiers = without(r.tiered(), check.item)
        if tiers:
            shown = tuple(i for i in r.shown_order if i != check.item)
            order = tuple(flatten(tiers))
            out.append(dataclasses.replace(r, order=order, shown_order=shown, tiers=tiers))
    return out


def consensus_reliability(records: list[RankingRecord], excluded: set) -> dict[object, Reliability]:
    """Each annotator's leave-one-out rho against the consensus of the annotators who
    count: an excluded annotator is scored against them, never part of their consensus."""
    counted = [r for r in records if r.annotator not in excluded]
    out = annotator_reliability(counted)
    for user in excluded:
        own = [r for r in records if r.annotator == user]
        if own:
            # rho is per task: only the tasks this annotator ranked matter
            tasks = {r.task_id for r in own}
            shared = [r for r in counted if r.task_id in tasks]
            out[user] = annotator_reliability(shared + own)[user]
    return out


def annotator_rows(
    include_synthetic: bool = False,
    study: Study | None = None,
    consented: quality_selectors.ConsentedQuality | None = None,
) -> list[dict]:
    """The annotator table (``ANNOTATOR_COLUMNS`` and more) of one study (the default one
    unless given), ordered by pseudonym; ``consented``: the study's rankings, if read."""
    if consented is None:
        consented = quality_selectors.consented_quality(include_synthetic, _scope(study))
    inputs = consented.inputs
    flags = zip(inputs.records, consented.since_reinstatement, consented.gold_task, strict=True)
    since, shared = [], []
    for r, is_since, is_gold in flags:
        if is_since:
            since.append(r)
        if not is_gold:
            shared.append(r)
    quality = annotator_quality(since, inputs.gold, inputs.checks)
    records = without_check_cards(shared, inputs.checks)
    profiles = quality_selectors.annotator_statuses({r.annotator for r in records} | set(quality))
    reliability = consensus_reliability(
        records, {p["user_id"] for p in profiles if p["status"] == AnnotatorStatus.EXCLUDED}
    )
    rows = []
    for p in profiles:
        user = p["user_id"]
        q = quality.get(user)
        rel = reliability.get(user)
        rows.append(
            {
                "pseudonym": pseudonym(user),
                "profile": p["pk"],
                "tasks": q.n_rankings if q else 0,
                "gold_tasks": q.n_gold if q else 0,
                "gold_score": q.gold_score if q else None,
                "checks": q.n_checks if q else 0,
                "check_pass_rate": q.check_pass_rate if q else None,
                "consensus_rho": rel.rho if rel else None,
                "consensus_tasks": rel.n_tasks if rel else 0,
                "median_seconds": q.median_seconds if q else None,
                "untouched_rate": q.untouched_rate if q else None,
                "status": p["status"],
                "status_reason": p["reason"] or "",
                "synthetic": p["is_synthetic"],
                "synthetic_kind": p["synthetic_kind"],
            }
        )
    return json_safe(sorted(rows, key=lambda r: r["pseudonym"]))


def time_on_task(records: list[RankingRecord]) -> dict:
    """The time the rankings that count took (those with a time): how many, the median
    seconds of one, the annotator-minutes in all and the rankings per annotator-minute,
    so a study can weigh its reliability against the time its format asks."""
    seconds = sorted(r.seconds for r in records if r.seconds is not None)
    total = sum(seconds)
    return {
        "rankings_timed": len(seconds),
        "median_seconds": statistics.median(seconds) if seconds else None,
        "annotator_minutes": total / 60,
        "rankings_per_minute": len(seconds) / (total / 60) if total else None,
    }


def item_scores(records: list[RankingRecord], question_format: str) -> dict | None:
    """``pair_fit.against_counting`` over the answers; None for a strict-rank study."""
    if question_format == Study.Question.RANK:
        return None
    return against_counting(r.tiered() for r in records)


def _scope(study: Study | None) -> list[Study] | None:
    return None if study is None else [study]


def quality_report(
    include_synthetic: bool = False,
    *,
    n_boot: int | None = None,
    seed: int = 0,
    study: Study | None = None,
) -> dict:
    """Everything the quality pages show for one study (the default one unless given), as
    plain JSON-ready data (module docstring)."""
    config = settings.STEREORANK
    n_boot = config["QUALITY_N_BOOT"] if n_boot is None else n_boot
    consented = quality_selectors.consented_quality(include_synthetic, _scope(study))
    records = without_check_cards(consented.counted(), consented.inputs.checks)
    fields = list(selectors.demographic_questions().values_list("key", flat=True))
    fields.append(GROUPING)  # the portal's language, a grouping too (core.languages)
    agreement = breakdown(records, fields, k=config["GROUP_K"], n_boot=n_boot, seed=seed)
    # Position bias on tasks without a check card: a check's instructed card, taken out,
    # would leave the others' shown places gapped, and the page names a group by the cards
    # participants saw (issue 37: "Tasks of 5 cards" where every task showed 6).
    checks = consented.inputs.checks
    bias = position_bias([r for r in records if r.task_id not in checks], n_boot=n_boot, seed=seed)
    study_row = study or default_study()
    return json_safe(
        {
            "study": study_row.slug,
            "question_format": study_row.question_format,
            "split_half": split_half(records, n_boot=n_boot, seed=seed).as_dict(),
            "time_on_task": time_on_task(records),
            "item_scores": item_scores(records, study_row.question_format),
            "include_synthetic": include_synthetic,
            "n_boot": n_boot,
            "n_rankings": len(records),
            "agreement": agreement,
            "position_bias": {str(k): b.as_dict() for k, b in bias.items()},
            "annotators": annotator_rows(include_synthetic, study, consented),
            "policy": dataclasses.asdict(standing.policy()),
        }
    )
