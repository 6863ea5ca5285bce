"""Reliability weights for item labels (off by default: ``STEREORANK["LABEL_WEIGHTING"]``).

The estimator, kept simple so that a research team can state it in a paper:

* ``rho_a``: annotator ``a``'s mean Spearman rho with the leave-one-out consensus
  of the others, over the tasks they share (``agreement.annotator_reliability``,
  the figure the quality report shows per annotator);
* ``w_a = max(0, rho_a)`` when ``a`` shares at least ``min_tasks`` tasks with
  others: an annotator who orders like the rest counts fully, one who orders at
  random counts for about nothing, and nobody counts negatively;
* otherwise ``w_a`` is the median of the estimated weights (1 when nobody has
  enough shared tasks): without evidence an annotator is neither rewarded nor
  punished against the typical one.

An item's label is then the weighted mean of its rankings' ``position / (K - 1)``
(``labels.item_labels``). With overlap 1 (no shared tasks), every weight is 1
and the labels are the unweighted ones. Weights are figures about annotators,
not demographics; a snapshot records them under pseudonyms.

Why it is off by default: agreement with the consensus cannot tell a careless
annotator from one who sees stereotypes differently. A group whose view departs
from the majority's is weighted down with the careless, and the pooled labels
move toward the majority. Group labels (``labels.group_labels``) are never
weighted, so a perspective report on a weighted snapshot still shows each
group's own view; compare it with one on an unweighted snapshot before relying
on weights. With agreement overlap 2 the consensus is a single other annotator,
so rho is symmetric and a careful annotator paired with a careless one is
marked down too: use 3 or more.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from .agreement import annotator_reliability
from .records import Annotator, RankingRecord

ESTIMATED, TOO_FEW = "estimated", "too few shared tasks"


@dataclass(frozen=True)
class Weight:
    """An annotator's label weight, the reliability it came from, and how."""

    annotator: Annotator
    weight: float
    rho: float  # NaN without shared tasks
    shared_tasks: int
    basis: str  # ESTIMATED or TOO_FEW


def reliability_weights(records: Iterable[RankingRecord], min_tasks: int = 3) -> dict:
    """``{annotator: Weight}`` for every annotator in ``records`` (see the module)."""
    if min_tasks < 1:
        raise ValueError(f"min_tasks must be at least 1, not {min_tasks}")
    reliability = annotator_reliability(records)
    estimated = {a: max(0.0, r.rho) for a, r in reliability.items() if r.n_tasks >= min_tasks}
    fallback = float(np.median(list(estimated.values()))) if estimated else 1.0
    return {
        a: Weight(
            annotator=a,
            weight=estimated.get(a, fallback),
            rho=r.rho,
            shared_tasks=r.n_tasks,
            basis=ESTIMATED if a in estimated else TOO_FEW,
        )
        for a, r in reliability.items()
    }
