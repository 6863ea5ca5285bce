"""Steered and balanced runs: training data from one snapshot's group labels.

A run's steering is recorded in its hyper-parameters (``"steering"``) and so in
its checkpoint's hyper-parameters and manifest (lineage). Two kinds:

* **steered** ``{"kind": "steered", "field": F, "value": V}``: trained on group
  V's labels only: the train items V's annotators ranked, each labelled as V
  ranked it (``snapshot.group_labels[F][V]``, keyed by example key).
* **balanced** ``{"kind": "balanced", "field": F}``: every group of F weighs the
  same in the loss. Estimator, over the train items that some group of F ranked
  (items ranked only by people who left F unanswered are left out): with G
  groups, n_g the train items group g labelled and y_g(i) its label of item i,
  each group spreads a mass 1/G evenly over its items, ``m_g(i) = 1 / (G n_g)``;
  the item's label is the mass-weighted mean of its groups' labels,
  ``y(i) = sum_g m_g(i) y_g(i) / sum_g m_g(i)``, and its weight in the loss
  ``w(i) = N sum_g m_g(i)`` (N items, so weights average 1 and each group's
  items weigh N / G in all). ``training.ml.losses`` multiplies an item's MSE term
  by w(i) and a list's listwise term by its items' mean weight. A snapshot
  keeps group labels, not counts, so a group's items weigh alike however many
  of its rankings each had; with overlap 1 (one ranking per item) that is the
  same, and each list (one task's items) carries its ranker's group's weight.
* **group heads** ``{"kind": "group_heads", "field": F}``: the pooled head trained
  on the pooled labels as is, then one head per group of F beside it
  (``training.runs.group_heads``).

Evaluation stays on the snapshot's pooled eval split, so a steered or balanced
version compares with any other in the registry; its perspective report says
how it does for each group.
"""

from __future__ import annotations

from collections import defaultdict

from training.errors import RunError
from training.models import DatasetSnapshot
from training.snapshots.services import TRAIN, rows_of

STEERED, BALANCED, GROUP_HEADS = "steered", "balanced", "group_heads"
KEY = "steering"


def parse(
    steer: str | None = None, balance: str | None = None, groups: str | None = None
) -> dict | None:
    """``--steer FIELD=VALUE``, ``--balance FIELD`` or ``--groups FIELD`` as a steering
    dict (None: pooled)."""
    if sum(bool(x) for x in (steer, balance, groups)) > 1:
        raise RunError("one of steer, balance and groups, not two")
    if groups:
        return {"kind": GROUP_HEADS, "field": groups.strip()}
    if steer:
        field, sep, value = steer.partition("=")
        if not sep or not field.strip() or not value.strip():
            raise RunError(f"steer as FIELD=VALUE (e.g. age_band=65-74), not {steer!r}")
        return {"kind": STEERED, "field": field.strip(), "value": value.strip()}
    if balance:
        return {"kind": BALANCED, "field": balance.strip()}
    return None


def train_groups(snapshot: DatasetSnapshot, field: str) -> dict[str, dict[str, float]]:
    """``{value: {key: label}}`` of ``field`` over the train split; groups with none left out."""
    if field not in (snapshot.group_labels or {}):
        known = ", ".join(sorted(snapshot.group_labels or {})) or "none"
        raise RunError(f"snapshot {snapshot.pk} has no group labels for {field!r} (it has {known})")
    train = {r["key"] for r in rows_of(snapshot, TRAIN)}
    groups = {
        value: {key: y for key, y in labels.items() if key in train}
        for value, labels in snapshot.group_labels[field].items()
    }
    return {value: labels for value, labels in sorted(groups.items()) if labels}


def check(snapshot: DatasetSnapshot, steering: dict | None) -> None:
    """``RunError`` unless the snapshot can train this steering."""
    if steering is None:
        return
    kind, field = steering.get("kind"), steering.get("field")
    if kind not in (STEERED, BALANCED, GROUP_HEADS) or not field:
        raise RunError(
            f"steering must be steered (field, value), balanced or group_heads (field): {steering}"
        )
    if kind == GROUP_HEADS:
        return  # training.runs.group_heads checks its groups (sizes need the rankings)
    groups = train_groups(snapshot, field)
    if kind == STEERED:
        value = steering.get("value")
        if len(groups.get(value, {})) < 2:
            have = ", ".join(groups) or "none"
            raise RunError(
                f"group {field}={value} has fewer than 2 train items in snapshot {snapshot.pk} "
                f"(groups with train items: {have})"
            )
    elif len(groups) < 2:
        raise RunError(
            f"balancing {field} needs 2 groups with train items; snapshot has {len(groups)}"
        )


def balanced(groups: dict[str, dict[str, float]]) -> dict[str, tuple[float, float]]:
    """``{key: (label, weight)}`` by the balanced estimator (module doc)."""
    n_groups = len(groups)
    mass: dict[str, float] = defaultdict(float)
    weighted: dict[str, float] = defaultdict(float)
    for labels in groups.values():
        share = 1.0 / (n_groups * len(labels))
        for key, y in labels.items():
            mass[key] += share
            weighted[key] += share * y
    n = len(mass)
    return {key: (weighted[key] / mass[key], n * mass[key]) for key in mass}


def train_rows(snapshot: DatasetSnapshot, steering: dict | None) -> list[dict]:
    """The snapshot's train rows, relabelled and weighted for the steering (as is: None)."""
    rows = rows_of(snapshot, TRAIN)
    if steering is None or steering["kind"] == GROUP_HEADS:
        return rows
    groups = train_groups(snapshot, steering["field"])
    if steering["kind"] == STEERED:
        labels = groups.get(steering["value"], {})
        return [{**r, "label": labels[r["key"]]} for r in rows if r["key"] in labels]
    by_key = balanced(groups)
    return [
        {**r, "label": by_key[r["key"]][0], "weight": by_key[r["key"]][1]}
        for r in rows
        if r["key"] in by_key
    ]


def split_hyperparameters(hyperparameters: dict) -> tuple[dict, dict | None]:
    """A run's hyper-parameters as ``(TrainConfig's, steering)``."""
    config = {k: v for k, v in hyperparameters.items() if k != KEY}
    return config, hyperparameters.get(KEY)
