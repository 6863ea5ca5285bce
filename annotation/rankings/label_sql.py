"""Item and group labels aggregated in PostgreSQL, without one Python object per ranked item.

The same labels as ``labels.item_labels`` and ``labels.group_labels`` over
``selectors.label_rows`` (unweighted), computed by one query: the ranked items of the
rankings that count, the attention-check card dropped, each item's place among the rest
(``annotation.stats.tiers``) from one window ordered by tier index, doubled to stay an
integer: ``rank() over w - 1`` items in earlier tiers plus ``count(*) over w - 1`` (the
default frame runs to the last item of the row's own tier), and K the ranking's remaining
items (``count(*) over``); then ``sum(2 x place)`` and ``count(*)`` per cell (item, K and
the annotator's group in every field: the groups are worked out once per annotator, not per
ranked item), and from the cells per item and K, for everyone and per group of each field
(``GROUPING SETS``, hashed: the transaction's ``work_mem`` is raised for it). An item's
label is ``sum over K of (sum of places / (K - 1))`` over its rankings of 2 or more items,
divided by their number. A group is ``quality.records.group_of``'s rule in SQL: a string
answer, trimmed of whitespace, not empty, not "prefer not to say". What comes back is one
row per item, K and group, not per ranked item.

Other databases (SQLite, the embedded default) return ``None``: the callers keep the Python
path there.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import connection, transaction

from annotation.models import AnnotatorProfile, RankedItem, Ranking, RankingTask, Study
from annotation.rankings.selectors import counted_rankings
from annotation.stats.records import PREFER_NOT_TO_SAY, group_of
from core.small_groups import keep_groups

WHITESPACE = " \t\n\r\x0b\x0c"
WORK_MEM = "64MB"


@dataclass(frozen=True)
class AggregatedLabels:
    """``labels``: ``{item: label}``; ``groups``: ``{field: {group: {item: label}}}``;
    the rankings they rest on: how many, and the last one's id."""

    labels: dict[int, float]
    groups: dict[str, dict[str, dict[int, float]]]
    ranking_count: int
    last_ranking_id: int | None


def _group_expression(i: int) -> str:
    answer = f"btrim(p.demographics ->> %(f{i})s, %(ws)s)"
    return (
        f"CASE WHEN jsonb_typeof(p.demographics -> %(f{i})s) = 'string' AND {answer} <> '' "
        f"AND lower({answer}) <> %(pnts)s THEN {answer} END"
    )


def _tables() -> tuple[str, ...]:
    return tuple(m._meta.db_table for m in (RankedItem, Ranking, RankingTask, AnnotatorProfile))


def _prefix(counted_sql: str) -> str:
    """The rankings that count, with their check card and annotator."""
    _, ranking, task, _ = _tables()
    return f"""
    WITH counted AS ({counted_sql}),
    d AS (
        SELECT r.id, r.annotator_id, t.check_item_id AS card
        FROM {ranking} r
        JOIN {task} t ON t.id = r.task_id
        WHERE r.id IN (SELECT pk FROM counted)
    )"""


def _sql(fields: Sequence[str], counted_sql: str) -> str:
    ranked, _, _, profile = _tables()
    n = len(fields)
    groups = "".join(f", {_group_expression(i)} AS g{i}" for i in range(n))
    gs = [f"g{i}" for i in range(n)]
    sets = ["(item_id, k)"] + [f"(item_id, k, g{i})" for i in range(n)]
    flags = "".join(f", GROUPING(g{i}) AS x{i}" for i in range(n))
    return f"""{_prefix(counted_sql)},
    ri AS (
        SELECT x.item_id, d.annotator_id,
               rank() OVER w + count(*) OVER w - 2 AS pos2,
               count(*) OVER (PARTITION BY x.ranking_id) AS k
        FROM {ranked} x JOIN d ON d.id = x.ranking_id
        WHERE x.item_id IS DISTINCT FROM d.card
        WINDOW w AS (PARTITION BY x.ranking_id ORDER BY x.position)
    ),
    g AS MATERIALIZED (SELECT p.id{groups} FROM {profile} p),
    cell AS (
        SELECT ri.item_id, ri.k{"".join(", g." + c for c in gs)}, sum(ri.pos2) AS s, count(*) AS c
        FROM ri JOIN g ON g.id = ri.annotator_id
        GROUP BY ri.item_id, ri.k{"".join(", g." + c for c in gs)}
    )
    SELECT item_id, k{"".join(", " + c for c in gs)}{flags}, sum(s), sum(c)::bigint
    FROM cell
    GROUP BY GROUPING SETS ({", ".join(sets)})
    """


def _count_sql(counted_sql: str) -> str:
    """How many rankings hold an item besides the card, and the last one's id."""
    return f"""{_prefix(counted_sql)}
    SELECT count(*), max(d.id) FROM d WHERE EXISTS (
        SELECT 1 FROM {_tables()[0]} x
        WHERE x.ranking_id = d.id AND x.item_id IS DISTINCT FROM d.card
    )"""


def aggregated_labels(
    include_synthetic: bool, fields: Sequence[str], studies=None, group_k: int = 1
) -> AggregatedLabels | None:
    """The labels of the rankings of ``studies`` (the default study for None; never a
    validation study's) that count, everyone's and per group of ``fields`` with ``group_k``
    or more annotators, aggregated in PostgreSQL (module docstring); ``None`` on other
    databases."""
    if connection.vendor != "postgresql":
        return None
    rankings = counted_rankings(include_synthetic, studies).exclude(
        task__study__kind=Study.Kind.VALIDATION
    )
    counted, params = rankings.order_by().values("pk").query.sql_with_params()
    # Django's SQL uses %s placeholders; the rest of the query names its own.
    names = {f"c{i}": p for i, p in enumerate(params)}
    counted = counted % tuple(f"%(c{i})s" for i in range(len(params)))
    names.update({f"f{i}": f for i, f in enumerate(fields)})
    names.update(ws=WHITESPACE, pnts=PREFER_NOT_TO_SAY.lower())
    sums: dict[tuple, dict[int, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0.0, 0]))
    n = len(fields)
    with transaction.atomic(), connection.cursor() as cursor:
        # Room to hash the per-item cells rather than sort every ranked item to disk.
        cursor.execute(f"SET LOCAL work_mem = '{WORK_MEM}'")
        cursor.execute(_count_sql(counted), names)
        count, last = cursor.fetchone()
        cursor.execute(_sql(fields, counted), names)
        for row in cursor.fetchall():
            item, k, values, flags = row[0], row[1], row[2 : 2 + n], row[2 + n : 2 + 2 * n]
            total, rows = row[2 + 2 * n :]
            grouped = [i for i in range(n) if not flags[i]]
            key = (grouped[0], values[grouped[0]]) if grouped else None
            if (key is not None and key[1] is None) or k < 2:
                continue  # no group (unanswered, prefer not to say), or K < 2
            acc = sums[key][item]
            acc[0] += float(total) / 2 / (k - 1)
            acc[1] += rows
    labels = {i: s / c for i, (s, c) in sorted(sums.pop(None, {}).items())}
    groups: dict[str, dict[str, dict[int, float]]] = {f: {} for f in fields}
    kept = set(sums)
    if group_k > 1:  # core.small_groups: a group of fewer than k keeps no labels
        members = _members(rankings, fields)
        sizes = {(i, value): len(members[(fields[i], value)]) for i, value in sums}
        kept = set(keep_groups(sizes, group_k).groups)
    for (i, value), per_item in sorted(sums.items()):
        if (i, value) in kept:
            groups[fields[i]][value] = {item: s / c for item, (s, c) in sorted(per_item.items())}
    return AggregatedLabels(labels, groups, count, last)


def _members(rankings, fields: Sequence[str]) -> dict[tuple[str, str], set[int]]:
    """``{(field, group): annotator ids}`` among the annotators of ``rankings`` (one query,
    one row per annotator): a group of fewer than k keeps no labels."""
    members: dict[tuple[str, str], set[int]] = defaultdict(set)
    answers = rankings.order_by().values_list("annotator_id", "annotator__demographics")
    for annotator, demographics in answers.distinct():
        for field in fields:
            value = group_of(demographics or {}, field)
            if value is not None:
                members[(field, value)].add(annotator)
    return members
