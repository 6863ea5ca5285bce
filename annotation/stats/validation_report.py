"""A validation study's report: the statistics of ``validation.py`` per condition, per
occupation and per demographic group, with the power analysis, as one JSON-safe dict.

* **Per occupation** (where did the treatment fail?) and **per group** (each
  value of each demographic field, ``records.group_of``): annotators, rankings,
  each condition's mean of annotator means, the difference in mean rank and
  the probability of superiority with two-way cluster bootstrap intervals
  (within one occupation only annotators vary), and the paired t. Occupations'
  paired p come with Benjamini-Hochberg q-values (``scipy.stats.false_discovery_control``).
* **k-anonymity**: a group with fewer than ``k`` annotators is hidden
  (``core.small_groups.keep_groups``, as in the agreement breakdowns and the
  perspective reports): ``per_group`` names none, ``hidden_groups`` counts them per
  field. The per-annotator means in the report carry the pseudonym only, never the
  group, so a hidden group cannot be recomputed from them.
* **Power** (``power.py``): the paired t at the study's ``d_z`` and Welch's at
  its difference and SDs: the achieved power and the annotators needed for
  ``target_power`` at ``alpha``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
from scipy import stats

from core.json import json_safe
from core.small_groups import KeptGroups, keep_groups

from . import power
from .records import Annotator, group_of
from .validation import (
    Study,
    ValidationDataError,
    ValidationRecord,
    annotator_means,
    cluster_bootstrap,
    effect_sizes,
    paired_t,
    study,
    summary,
    welch,
    wilcoxon,
)


def _figures(s: Study, *, n_boot: int, seed: int) -> dict:
    """The figures of one subset (an occupation, a group): means, bootstrap, paired t."""
    base, treat, _ = annotator_means(s)
    boot = cluster_bootstrap(s, n_boot=n_boot, seed=seed)
    return {
        "n_annotators": len(s.annotators),
        "n_rankings": len(s.ann),
        "mean_rank": {s.baseline: base.mean(), s.treatment: treat.mean()},
        "difference": boot["difference"].as_dict(),
        "probability_of_superiority": boot["probability_of_superiority"].as_dict(),
        "paired_t": paired_t(base, treat).as_dict() if base.size > 1 else None,
    }


def per_occupation(s: Study, *, n_boot: int = 2000, seed: int = 0) -> dict[str, dict]:
    """``{occupation: figures}``, with Benjamini-Hochberg q-values of the paired t's p."""
    out = {
        occ: _figures(s.subset(s.occ == i), n_boot=n_boot, seed=seed)
        for i, occ in enumerate(s.occupations)
    }
    tested = [occ for occ, f in out.items() if f["paired_t"] and np.isfinite(f["paired_t"]["p"])]
    if tested:
        q = stats.false_discovery_control([out[occ]["paired_t"]["p"] for occ in tested])
        for occ, value in zip(tested, q, strict=True):
            out[occ]["paired_t"]["q"] = float(value)
    return out


def per_group(
    s: Study, groups: Mapping[Annotator, Mapping], *, k: int, n_boot: int = 2000, seed: int = 0
) -> dict[str, KeptGroups[dict]]:
    """``{field: KeptGroups({group: figures})}``: groups of ``k`` or more annotators only,
    with how many smaller ones were hidden."""
    if k < 1:
        raise ValidationDataError(f"k must be >= 1, got {k}")
    fields = sorted({f for g in groups.values() for f in g})
    out: dict[str, KeptGroups[dict]] = {}
    for f in fields:
        member = np.array([group_of(groups.get(a, {}), f) for a in s.annotators], dtype=object)
        members = {
            v: np.flatnonzero(member == v) for v in sorted({v for v in member if v is not None})
        }
        shown = keep_groups(members, k, size=lambda ids: int(ids.size))
        figures = {
            value: _figures(s.subset(np.isin(s.ann, ids)), n_boot=n_boot, seed=seed)
            for value, ids in shown.groups.items()
        }
        out[f] = KeptGroups(figures, shown.hidden, k)
    return out


def _groups(records: list[ValidationRecord]) -> dict[Annotator, Mapping]:
    groups: dict[Annotator, Mapping] = {}
    for r in records:
        if groups.setdefault(r.annotator, r.group) != r.group:
            raise ValidationDataError(f"annotator {r.annotator!r}: records disagree on their group")
    return groups


def report(
    records: Iterable[ValidationRecord],
    *,
    k: int = 5,
    n_boot: int = 2000,
    seed: int = 0,
    baseline: str = "original",
    treatment: str = "optimised",
    alpha: float = 0.05,
    target_power: float = 0.8,
) -> dict:
    """The validation report as a JSON-safe dict (see the module docstring for each figure)."""
    records = list(records)
    s = study(records, baseline=baseline, treatment=treatment)
    base, treat, n = annotator_means(s)
    if base.size < 2:
        raise ValidationDataError(f"{base.size} annotator: the tests need 2 or more")
    sb, st = summary(base), summary(treat)
    effects = effect_sizes(s, n_boot=n_boot, seed=seed)
    boot = cluster_bootstrap(s, n_boot=n_boot, seed=seed)
    groups = per_group(s, _groups(records), k=k, n_boot=n_boot, seed=seed)
    return json_safe(
        {
            "orientation": "rank = position + 1, 1..K; higher = less stereotypical",
            "conditions": {"baseline": baseline, "treatment": treatment},
            "k_items": s.k,
            "n_annotators": len(s.annotators),
            "n_rankings": len(s.ann),
            "n_occupations": len(s.occupations),
            "per_condition": {baseline: sb, treatment: st},
            "between_condition_correlation": np.corrcoef(base, treat)[0, 1],
            "welch": welch(base, treat).as_dict(),
            "paired_t": paired_t(base, treat).as_dict(),
            "wilcoxon": wilcoxon(base, treat),
            "bootstrap": {
                "resampled": ["annotators", "occupations"],
                "difference": boot["difference"].as_dict(),
                "mean_rank": {c: e.as_dict() for c, e in boot["mean_rank"].items()},
            },
            "effect_size": {
                **{name: e.as_dict() for name, e in effects.items()},
                "probability_of_superiority": boot["probability_of_superiority"].as_dict(),
            },
            "per_occupation": per_occupation(s, n_boot=n_boot, seed=seed),
            "per_group": {f: shown.groups for f, shown in groups.items()},
            "hidden_groups": {f: shown.hidden for f, shown in groups.items()},
            "group_k": k,
            "power": {
                "paired_t": power.paired(
                    effects["d_z"].value, base.size, alpha=alpha, target=target_power
                ).as_dict(),
                "welch": power.welch(
                    st["mean"] - sb["mean"],
                    sb["sd"],
                    st["sd"],
                    base.size,
                    alpha=alpha,
                    target=target_power,
                ).as_dict(),
            },
            "annotators": [
                {
                    "annotator": str(a),
                    "n_rankings": int(n[i]),
                    "mean_rank": {baseline: base[i], treatment: treat[i]},
                }
                for i, a in enumerate(s.annotators)
            ],
        }
    )
