"""Perspective reports: whose opinions does a checkpoint reward, group by group?

For a checkpoint, a snapshot and a demographic field, ``compute_reports`` scores
every item of the snapshot's rankings with the checkpoint and hands them to
``training.ml.alignment_report.perspective_report`` (the measures, their formulas
and sources: ``docs/perspectives.md``), over the snapshot's eval prompts, at the
checkpoint's training temperature T and with k from ``STEREORANK["GROUP_K"]``.
The result is stored once: a ``PerspectiveSummary`` per field and a
``PerspectiveReport`` per group (groups under k: their name only). Stored reports
are reused, never recomputed; pages and the API read them and queue what is
missing (``request_reports``, the default queue: the report reads every ranking of
the snapshot and scores its items once on the CPU, so it never blocks training on
the solo gpu worker).

Which rankings (decision): a snapshot freezes aggregated labels, not rankings
(no personal data in it). Its rankings are read when the report is computed, as
they count then (``training.selectors.snapshot_rankings``: id up to the
snapshot's last, through ``counted_rankings``). So a report computed for every
new checkpoint right after its run reads what the run trained on; one computed
later for an old snapshot leaves out the rankings of people who withdrew since
(and the quality policy's exclusions); and a stored report is never changed by
a later withdrawal, as a trained checkpoint is not. An erasure deletes the stored
reports that read the erased person's rankings (a group of one is named by its one
member's answer: ``training.snapshots.erasure``); they are queued again when asked
for, and read the rankings as they count then. A ranked item the snapshot does not
hold (an attention-check card) is dropped and the others close up, as labels do.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import asdict

from django.conf import settings
from django.db import IntegrityError, transaction

from annotation.models import DemographicField
from annotation.stats.records import group_of
from core import queue
from core.json import json_safe
from core.languages import GROUPING
from core.small_groups import keep_groups
from training import selectors
from training.errors import PerspectiveError, PerspectivesPending, UnknownField
from training.models import Checkpoint, DatasetSnapshot, PerspectiveReport, PerspectiveSummary
from training.snapshots.services import EVAL
from training.storage import encoders
from training.storage.encoders import load_model

log = logging.getLogger(__name__)
# The seed's listwise temperature (TrainConfig's default), for heads that record none
# (an imported seed .pth carries no hyper-parameters).
DEFAULT_TEMPERATURE = 0.5
TASK = "training.tasks.perspective_report"


def k_anonymity() -> int:
    """k: the fewest annotators behind any group's figures (settings, default 5)."""
    k = int(settings.STEREORANK["GROUP_K"])
    if k < 1:
        raise PerspectiveError(f"STEREORANK['GROUP_K'] must be at least 1, not {k}")
    return k


def temperature(checkpoint: Checkpoint) -> float:
    """T of the checkpoint's training (its hyper-parameters), else the seed's 0.5."""
    return float((checkpoint.hyperparameters or {}).get("temperature", DEFAULT_TEMPERATURE))


def report_snapshot(
    checkpoint: Checkpoint, snapshot: DatasetSnapshot | None = None
) -> DatasetSnapshot:
    """The snapshot asked for, else the checkpoint's own (an imported one has none)."""
    if snapshot is None:
        snapshot = checkpoint.snapshot
        if snapshot is None:
            raise PerspectiveError(f"v{checkpoint.version} has no snapshot of its own: name one")
    return snapshot


def report_fields(snapshot: DatasetSnapshot, fields: Iterable[str] | None = None) -> list[str]:
    """The fields asked for, checked; all the snapshot's demographic fields by default.
    The portal's language (``core.languages.GROUPING``) is a field one may ask for."""
    known = (
        set(snapshot.group_labels or {})
        | set(DemographicField.objects.values_list("key", flat=True))
        | {GROUPING}
    )
    if fields is None:
        return sorted(snapshot.group_labels or {}) or sorted(known - {GROUPING})
    fields = list(dict.fromkeys(fields))
    unknown = [f for f in fields if f not in known]
    if unknown:
        raise UnknownField(f"no demographic field {', '.join(map(repr, unknown))}")
    return fields


def request_reports(
    checkpoint: Checkpoint, snapshot: DatasetSnapshot, fields: Sequence[str] | None = None
) -> None:
    """Queue the report on the default queue once the caller's transaction commits (by name:
    no service imports the task module)."""
    queue.after_commit(
        TASK, checkpoint.pk, snapshot.pk, list(fields) if fields is not None else None
    )


def study_rankings(snapshot: DatasetSnapshot):
    """The snapshot's rankings today, each item's prompt and text, and the eval prompts.

    A ranked item the snapshot does not hold (one that gets no label, such as an
    attention-check card) is dropped and the others close up, as labels do;
    rankings left with fewer than 2 items say nothing about order.
    """
    examples = {row["item_id"]: row for row in snapshot.examples}
    rankings = []
    for rid, annotator, order, demographics, occupation in selectors.snapshot_rankings(snapshot):
        held = [item for item in order if item in examples]
        if len(held) >= 2:
            rankings.append((rid, annotator, held, demographics, occupation))
    item_prompt = {item: row["group"] for item, row in examples.items()}
    texts = {item: examples[item]["text"] for row in rankings for item in row[2]}
    eval_prompts = {row["group"] for row in snapshot.examples if row["split"] == EVAL}
    return rankings, item_prompt, texts, eval_prompts


def _score(checkpoint: Checkpoint, texts: dict[int, str]) -> dict[int, float]:
    items = sorted(texts)
    scores = load_model(checkpoint).score(
        [texts[i] for i in items], cache=encoders.embedding_cache()
    )
    return {item: float(s) for item, s in zip(items, scores, strict=True)}


def compute_reports(
    checkpoint: Checkpoint,
    snapshot: DatasetSnapshot | None = None,
    fields: Iterable[str] | None = None,
    *,
    n_boot: int = 1000,
) -> list[PerspectiveSummary]:
    """Compute and store what is missing of the report (default: on the checkpoint's own
    snapshot, every field); returns the summaries of the fields asked for."""
    from training.ml.alignment import RankedList
    from training.ml.alignment_report import perspective_report

    snapshot = report_snapshot(checkpoint, snapshot)
    fields = report_fields(snapshot, fields)
    todo = selectors.perspectives_missing(checkpoint, snapshot, fields)
    if todo:
        rankings, item_prompt, texts, eval_prompts = study_rankings(snapshot)
        if not rankings:
            raise PerspectiveError(f"snapshot {snapshot.pk} has no rankings that count today")
        scores = _score(checkpoint, texts)
        k, t = k_anonymity(), temperature(checkpoint)
        for field in todo:
            ranked = [
                RankedList(rid, annotator, tuple(order), group_of(demo or {}, field), occupation)
                for rid, annotator, order, demo, occupation in rankings
            ]
            report = perspective_report(
                ranked,
                item_prompt,
                scores,
                temperature=t,
                k=k,
                prompts=eval_prompts,
                n_boot=n_boot,
                seed=snapshot.split_seed,
            )
            store(checkpoint, snapshot, field, report, ranked)
    return list(selectors.perspective_summaries(checkpoint, snapshot).filter(field__in=fields))


def store(checkpoint, snapshot, field: str, report, ranked) -> PerspectiveSummary:
    """Write one field's report (summary and group rows) in one transaction; a report a
    concurrent worker stored first is kept and returned."""
    figures = report.to_dict()
    try:
        with transaction.atomic():
            summary = PerspectiveSummary.objects.create(
                checkpoint=checkpoint,
                snapshot=snapshot,
                field=field,
                temperature=report.temperature,
                k=report.k,
                n_boot=report.n_boot,
                seed=report.seed,
                n_rankings=len(ranked),
                n_annotators=len({r.annotator for r in ranked}),
                friedman=json_safe(figures["friedman"]),
                divergence=json_safe(figures["divergence"]),
            )
            rows = [
                PerspectiveReport(
                    checkpoint=checkpoint,
                    snapshot=snapshot,
                    field=field,
                    group=g.group,
                    status=PerspectiveReport.Status.COMPUTED,
                    alignment=g.alignment,
                    figures=json_safe({k: v for k, v in asdict(g).items() if k != "group"}),
                )
                for g in report.groups
            ] + [
                PerspectiveReport(
                    checkpoint=checkpoint,
                    snapshot=snapshot,
                    field=field,
                    group=name,
                    status=PerspectiveReport.Status.FEWER_THAN_K,
                )
                for name in report.fewer_than_k
            ]
            PerspectiveReport.objects.bulk_create(rows)
            return summary
    except IntegrityError:
        log.info(
            "v%s on snapshot %s, %s: stored by another worker",
            checkpoint.version,
            snapshot.pk,
            field,
        )
        return PerspectiveSummary.objects.get(checkpoint=checkpoint, snapshot=snapshot, field=field)


def compare_versions(
    a: Checkpoint, b: Checkpoint, snapshot: DatasetSnapshot, field: str, *, n_boot: int = 1000
) -> list[dict]:
    """Per group computed in both reports (of today's k or more annotators in each, hidden
    otherwise: ``core.small_groups``): A's and B's alignment and the paired difference
    A - B over the prompts both hold (95% interval, p-value), and the verdict: ``gained``
    when the interval is above 0, ``lost`` when below, else ``no clear change``.

    Reads the stored reports (``PerspectivesPending`` names what is missing); pairs
    by prompt, so both must be on one snapshot.
    """
    from training.ml.alignment_report import paired_per_prompt

    missing = [c for c in (a, b) if selectors.perspectives_missing(c, snapshot, [field])]
    if missing:
        raise PerspectivesPending(snapshot, field, missing)
    rows = selectors.perspective_reports(field, snapshot=snapshot, checkpoints=[a, b]).filter(
        status=PerspectiveReport.Status.COMPUTED
    )
    by = {(r.checkpoint_id, r.group): r.figures for r in rows}
    both = {
        group: (by[(a.pk, group)], by[(b.pk, group)])
        for group in sorted({g for _, g in by})
        if (a.pk, group) in by and (b.pk, group) in by
    }
    # Groups under today's k hidden (k may have been raised since either was computed).
    shown = keep_groups(both, k_anonymity(), size=lambda p: min(f["n_annotators"] for f in p))
    out = []
    for group, (fa, fb) in shown.groups.items():
        diff, ci, p_value, n = paired_per_prompt(
            fa["per_prompt"], fb["per_prompt"], n_boot=n_boot, seed=snapshot.split_seed
        )
        verdict = "no clear change"
        if ci and ci[0] > 0:
            verdict = "gained"
        elif ci and ci[1] < 0:
            verdict = "lost"
        out.append(
            {
                "group": group,
                "alignment_a": fa["alignment"],
                "alignment_b": fb["alignment"],
                "diff": diff,
                "ci": ci,
                "p_value": p_value,
                "n_prompts": n,
                "verdict": verdict,
            }
        )
    return json_safe(out)
