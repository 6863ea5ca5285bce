"""Stored perspective reports as one JSON-ready dict or CSV rows (API, command, pages).

Read only: what ``training.perspectives.services`` stored. Groups under today's k
(``STEREORANK_GROUP_K``; ``core.small_groups``) are hidden: no name, no figure, only how
many per field (``hidden_groups``); a stored group of k or more when computed but under a
k raised since is hidden too, with the pairs of the divergence and a Friedman test it
took part in. Per-prompt alignment stays inside (it serves the paired comparisons) and
is left out here.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence

from core.json import json_safe
from core.small_groups import keep_groups
from core.spreadsheet import safe_row
from training import selectors
from training.models import Checkpoint, DatasetSnapshot, PerspectiveReport
from training.perspectives.services import k_anonymity

INTERNAL = ("per_prompt",)
# The status of a CSV row that counts a field's hidden groups.
HIDDEN = "hidden"
# CSV columns after version, snapshot, field, group, status: figures with interval ends.
FIGURES = ("alignment", "human_baseline", "spearman", "first_choice_js")
COUNTS = (
    "n_annotators",
    "n_rankings",
    "n_prompts",
    "n_placements",
    "baseline_annotators",
    "baseline_rankings",
    "baseline_prompts",
    "n_items",
    "n_occupations",
)


def _group(row: PerspectiveReport) -> dict:
    figures = {k: v for k, v in row.figures.items() if k not in INTERNAL}
    return {"group": row.group, "status": row.status, **figures}


def sort_key(group: dict) -> tuple:
    """Groups by alignment, best aligned first."""
    alignment = group.get("alignment")
    return (alignment is None, -(alignment or 0.0), group["group"])


def group_size(group: dict) -> int | None:
    """A stored group's annotators; None for one stored as under k (its size not kept)."""
    if group["status"] != PerspectiveReport.Status.COMPUTED:
        return None
    return group.get("n_annotators", 0)


def _kept_field(groups: list[dict], friedman: dict | None, divergence: list, k: int) -> dict:
    """The groups of k or more (best aligned first), how many were hidden, and the
    between-group figures of kept groups only."""
    shown = keep_groups({g["group"]: g for g in groups}, k, size=group_size)
    kept = set(shown.groups)
    if friedman and not set(friedman.get("groups", [])) <= kept:
        friedman = None
    return {
        "groups": sorted(shown.groups.values(), key=sort_key),
        "hidden_groups": shown.hidden,
        "friedman": friedman,
        "divergence": [
            d for d in divergence or [] if d["group_a"] in kept and d["group_b"] in kept
        ],
    }


def report(checkpoint: Checkpoint, snapshot: DatasetSnapshot, fields: Sequence[str]) -> dict:
    """The stored report of ``fields`` (all stored ones when empty), one entry per field."""
    summaries = selectors.perspective_summaries(checkpoint, snapshot)
    rows = selectors.perspective_reports_of(checkpoint, snapshot)
    if fields:  # the dashboards ask for one field: leave the others' figures unread
        summaries = summaries.filter(field__in=fields)
        rows = rows.filter(field__in=fields)
    by_field: dict[str, list[dict]] = {}
    for row in rows:
        by_field.setdefault(row.field, []).append(_group(row))
    k = k_anonymity()
    out = []
    for s in summaries.order_by("field"):
        out.append(
            {
                "field": s.field,
                "temperature": s.temperature,
                "k": max(k, s.k),
                "n_boot": s.n_boot,
                "seed": s.seed,
                "n_rankings": s.n_rankings,
                "n_annotators": s.n_annotators,
                "created_at": s.created_at.isoformat(),
                **_kept_field(by_field.get(s.field, []), s.friedman, s.divergence, max(k, s.k)),
            }
        )
    return json_safe({"version": checkpoint.version, "snapshot": snapshot.pk, "fields": out})


def across_versions(viewer, field: str, snapshot: DatasetSnapshot | None = None) -> list[tuple]:
    """``(version, group, alignment)`` of ``field``'s computed groups of today's k or more,
    of the versions ``viewer`` may see, oldest version first
    (``selectors.alignment_across_versions``)."""
    k = k_anonymity()
    rows = selectors.alignment_across_versions(viewer, field, snapshot)
    return [(v, g, a) for v, g, a, n in rows if keep_groups({g: n or 0}, k).groups]


def csv_rows(data: dict) -> list[dict]:
    """One flat row per group of a ``report``; where groups were hidden, one more row per
    field, ``status`` ``hidden``, no group, their number in ``hidden_groups``."""
    rows = []
    for field in data["fields"]:
        head = {"version": data["version"], "snapshot": data["snapshot"], "field": field["field"]}
        for g in field["groups"]:
            row = {**head, "group": g["group"], "status": g["status"]}
            for name in FIGURES:
                low, high = g.get(f"{name}_ci") or (None, None)
                row.update({name: g.get(name), f"{name}_low": low, f"{name}_high": high})
            row.update({name: g.get(name) for name in COUNTS})
            row.update(temperature=field["temperature"], k=field["k"])
            rows.append(row)
        if field["hidden_groups"]:
            hidden = {"status": HIDDEN, "hidden_groups": field["hidden_groups"], "k": field["k"]}
            rows.append({**head, "group": "", **hidden})
    return rows


def columns() -> list[str]:
    figures = [f"{n}{end}" for n in FIGURES for end in ("", "_low", "_high")]
    base = ["version", "snapshot", "field", "group", "status"]
    return base + figures + list(COUNTS) + ["temperature", "k", "hidden_groups"]


def to_csv(rows: Iterable[dict]) -> str:
    """CSV text with a header (``columns()``); missing cells empty; text cells a spreadsheet
    would run as a formula (a group named ``=HYPERLINK(...)``) escaped (``core.spreadsheet``)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns(), restval="", extrasaction="ignore")
    writer.writeheader()
    writer.writerows(safe_row(row) for row in rows)
    return buffer.getvalue()
