"""Stored perspective reports as one JSON-ready dict or CSV rows (API, command, pages).

Read only: what ``training.perspectives.services`` stored. Groups under k appear by name,
with no figure and no count. Per-prompt alignment stays inside (it serves the
paired comparisons) and is left out here.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence

from core.json import json_safe
from core.spreadsheet import safe_row
from training import selectors
from training.models import Checkpoint, DatasetSnapshot, PerspectiveReport

INTERNAL = ("per_prompt",)
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
    """Computed groups by alignment, best aligned first; then those under k by name."""
    alignment = group.get("alignment")
    return (alignment is None, -(alignment or 0.0), group["group"])


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
    out = []
    for s in summaries.order_by("field"):
        groups = sorted(by_field.get(s.field, []), key=sort_key)
        out.append(
            {
                "field": s.field,
                "temperature": s.temperature,
                "k": s.k,
                "n_boot": s.n_boot,
                "seed": s.seed,
                "n_rankings": s.n_rankings,
                "n_annotators": s.n_annotators,
                "created_at": s.created_at.isoformat(),
                "groups": [g for g in groups if g["status"] == PerspectiveReport.Status.COMPUTED],
                "fewer_than_k": [g["group"] for g in groups if g["status"] != "computed"],
                "friedman": s.friedman,
                "divergence": s.divergence,
            }
        )
    return json_safe({"version": checkpoint.version, "snapshot": snapshot.pk, "fields": out})


def csv_rows(data: dict) -> list[dict]:
    """One flat row per group of a ``report`` (groups under k: name and status only)."""
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
        for name in field["fewer_than_k"]:
            rows.append({**head, "group": name, "status": PerspectiveReport.Status.FEWER_THAN_K})
    return rows


def columns() -> list[str]:
    figures = [f"{n}{end}" for n in FIGURES for end in ("", "_low", "_high")]
    base = ["version", "snapshot", "field", "group", "status"]
    return base + figures + list(COUNTS) + ["temperature", "k"]


def to_csv(rows: Iterable[dict]) -> str:
    """CSV text with a header (``columns()``); missing cells empty; text cells a spreadsheet
    would run as a formula (a group named ``=HYPERLINK(...)``) escaped (``core.spreadsheet``)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns(), restval="", extrasaction="ignore")
    writer.writeheader()
    writer.writerows(safe_row(row) for row in rows)
    return buffer.getvalue()
