"""Perspective report for one checkpoint and one demographic field, and paired comparisons.

Per group with at least k annotators (``core.small_groups``; fewer: never computed, listed
in ``fewer_than_k`` for the store only, which no surface names):
* alignment: mean over prompts of ``1 - W1 / L`` between the group's position
  distribution and the model's Plackett-Luce one (``training.ml.alignment``);
* human baseline: the same between the group and everyone else (leave the
  group out; unanswered included), over the prompts both ranked;
* first-choice Jensen-Shannon distance, mean over occupations;
* rank agreement: Spearman's rho between scores and the group's labels.
Between groups: Friedman's test over groups with occupations as blocks (per-
occupation alignment, complete blocks only, 3 groups or more) and the pairwise
divergence, mean ``W1 / L`` between two groups' own position distributions.

Each group keeps its per-prompt alignment (``per_prompt``), so two versions (or
two groups) can be compared later, paired by prompt, without scoring again
(``paired_per_prompt``; ``paired_alignment`` is the same from scores).

Intervals are 95% percentile bootstraps, seeded: alignment, baseline and
divergence resample prompts; Spearman resamples prompts with their items (the
group bootstrap of ``training.ml.metrics``); JS resamples occupations.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import stats

from core.small_groups import keep_groups

from .alignment import (
    PositionDistributions,
    RankedList,
    alignment,
    first_choice_distributions,
    grid_size,
    item_labels,
    jensen_shannon_distance,
    position_distributions,
)
from .metrics import _ci, _group_resamples, bootstrap_p_value, spearman, spearman_resampled


@dataclass(frozen=True)
class GroupPerspective:
    """One group's figures, each with its 95% interval and the counts behind it."""

    group: str
    n_annotators: int
    n_rankings: int
    n_prompts: int
    n_placements: int
    alignment: float
    alignment_ci: list[float] | None
    human_baseline: float
    human_baseline_ci: list[float] | None
    baseline_prompts: int
    baseline_annotators: int
    baseline_rankings: int
    first_choice_js: float
    first_choice_js_ci: list[float] | None
    n_occupations: int
    spearman: float
    spearman_ci: list[float] | None
    n_items: int
    per_occupation: dict[str, float]
    per_prompt: dict = field(default_factory=dict)


@dataclass(frozen=True)
class FriedmanResult:
    """Friedman's chi-square over groups (treatments) with occupations as blocks."""

    statistic: float
    p_value: float
    groups: list[str]
    occupations: list[str]


@dataclass(frozen=True)
class Divergence:
    """Mean ``W1 / L`` between two groups' own position distributions, over shared prompts."""

    group_a: str
    group_b: str
    value: float
    ci: list[float] | None
    n_prompts: int


@dataclass(frozen=True)
class PerspectiveReport:
    """Every group's figures for one field; ``fewer_than_k`` lists the groups left out."""

    temperature: float
    k: int
    n_boot: int
    seed: int
    groups: list[GroupPerspective]
    fewer_than_k: list[str]
    friedman: FriedmanResult | None
    divergence: list[Divergence]

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class PairedAlignment:
    """Alignment of scores A minus scores B with one group, paired bootstrap over prompts."""

    group: str
    alignment_a: float
    alignment_b: float
    diff: float
    ci: list[float] | None
    p_value: float
    n_prompts: int
    n_annotators: int
    n_rankings: int
    n_boot: int


def _mean(values: np.ndarray) -> float:
    return float(values.mean()) if values.size else float("nan")


def _mean_ci(values: np.ndarray, n_boot: int, seed: int) -> list[float] | None:
    """95% interval of the mean, resampling the values (one per prompt) with replacement."""
    if values.size == 0 or n_boot <= 0:
        return None
    return _ci([values[i].mean() for i in _group_resamples(np.arange(values.size), n_boot, seed)])


def _between(a: PositionDistributions, b: PositionDistributions) -> np.ndarray:
    """Per-prompt alignment of two groups' own distributions, over the prompts both hold."""
    where = {p: j for j, p in enumerate(b.prompts)}
    ia = [j for j, p in enumerate(a.prompts) if p in where]
    ib = [where[a.prompts[j]] for j in ia]
    return np.asarray(alignment(a.human[ia], b.human[ib])) if ia else np.zeros(0)


def per_occupation_mean(values: np.ndarray, occupations: Sequence[str]) -> dict[str, float]:
    """Mean of per-prompt values within each occupation."""
    by: dict[str, list[float]] = defaultdict(list)
    for v, occ in zip(values.tolist(), occupations, strict=True):
        by[occ].append(v)
    return {occ: float(np.mean(by[occ])) for occ in sorted(by)}


def _spearman(group_rankings, item_prompt, scores, prompts, n_boot, seed):
    labels = {
        i: y
        for i, y in item_labels(group_rankings).items()
        if prompts is None or item_prompt[i] in prompts
    }
    items = sorted(labels, key=repr)
    try:
        pred = np.array([float(scores[i]) for i in items])
    except KeyError as exc:
        raise ValueError(f"no score for item {exc.args[0]!r}") from None
    target = np.array([labels[i] for i in items])
    groups = [repr(item_prompt[i]) for i in items]
    rho = spearman(pred, target)
    draws = _group_resamples(groups, n_boot, seed) if n_boot > 0 and items else []
    return rho, _ci(spearman_resampled(pred, target, draws)) if draws else None, len(items)


def _first_choice_js(rankings, item_prompt, scores, temperature, prompts, n_boot, seed):
    fc = first_choice_distributions(
        rankings, item_prompt, scores, temperature=temperature, prompts=prompts
    )
    js = np.array([jensen_shannon_distance(h, m) for _, h, m in fc.values()])
    return _mean(js), _mean_ci(js, n_boot, seed), js.size


def perspective_report(
    rankings: Sequence[RankedList],
    item_prompt: Mapping,
    scores: Mapping,
    *,
    temperature: float = 0.5,
    k: int = 5,
    prompts: Collection | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> PerspectiveReport:
    """The report for one field: ``rankings`` carry each annotator's value as ``group``.

    ``scores`` must cover every item of the rankings (a prompt's marginals depend
    on its ranking's other items); ``prompts`` (e.g. the eval split's) are the
    units, default all. A group, and the rest for its baseline, need ``k``
    annotators or more.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, not {k}")
    rankings = list(rankings)
    grid = grid_size(rankings)
    kwargs = dict(temperature=temperature, prompts=prompts, grid=grid)
    values = sorted({r.group for r in rankings if r.group is not None})
    distributions = {
        value: position_distributions(
            [r for r in rankings if r.group == value], item_prompt, scores, **kwargs
        )
        for value in values
    }
    shown = keep_groups(distributions, k, size=lambda d: len(d.annotators))
    kept: dict[str, PositionDistributions] = shown.groups
    small = [value for value in values if value not in kept]
    out: list[GroupPerspective] = []
    for value, d in kept.items():
        mine = [r for r in rankings if r.group == value]
        a = d.per_prompt_alignment()
        others = [r for r in rankings if r.group != value]
        # the rest on this group's prompts only, so its counts are those behind the baseline
        rest = position_distributions(others, item_prompt, prompts=set(d.prompts), grid=grid)
        base = _between(d, rest) if len(rest.annotators) >= k else np.zeros(0)
        js, js_ci, n_occ = _first_choice_js(
            mine, item_prompt, scores, temperature, prompts, n_boot, seed
        )
        rho, rho_ci, n_items = _spearman(mine, item_prompt, scores, prompts, n_boot, seed)
        out.append(
            GroupPerspective(
                group=value,
                n_annotators=len(d.annotators),
                n_rankings=len(d.rankings),
                n_prompts=len(d.prompts),
                n_placements=int(d.placements.sum()),
                alignment=_mean(a),
                alignment_ci=_mean_ci(a, n_boot, seed),
                human_baseline=_mean(base),
                human_baseline_ci=_mean_ci(base, n_boot, seed),
                baseline_prompts=int(base.size),
                baseline_annotators=len(rest.annotators) if base.size else 0,
                baseline_rankings=len(rest.rankings) if base.size else 0,
                first_choice_js=js,
                first_choice_js_ci=js_ci,
                n_occupations=n_occ,
                spearman=rho,
                spearman_ci=rho_ci,
                n_items=n_items,
                per_occupation=per_occupation_mean(a, d.occupations),
                per_prompt=dict(zip(d.prompts, a.tolist(), strict=True)),
            )
        )
    return PerspectiveReport(
        temperature=temperature,
        k=k,
        n_boot=n_boot,
        seed=seed,
        groups=out,
        fewer_than_k=small,
        friedman=friedman_over_groups({g.group: g.per_occupation for g in out}),
        divergence=group_divergence(kept, n_boot=n_boot, seed=seed),
    )


def friedman_over_groups(per_occupation: Mapping[str, Mapping[str, float]]):
    """Friedman's test (a ``FriedmanResult``): do groups' per-occupation alignments differ?

    ``None`` with fewer than 3 groups or 2 blocks.

    Blocks are the occupations every group has a value for; scipy's
    ``friedmanchisquare`` ranks the groups within each block (ties averaged).
    """
    groups = sorted(per_occupation)
    blocks = sorted(set.intersection(*(set(per_occupation[g]) for g in groups))) if groups else []
    if len(groups) < 3 or len(blocks) < 2:
        return None
    result = stats.friedmanchisquare(*([per_occupation[g][o] for o in blocks] for g in groups))
    return FriedmanResult(float(result.statistic), float(result.pvalue), groups, blocks)


def group_divergence(
    distributions: Mapping[str, PositionDistributions], *, n_boot: int = 1000, seed: int = 0
) -> list[Divergence]:
    """For each pair of groups, mean ``W1 / L`` over the prompts both ranked (= 1 - alignment)."""
    out = []
    names = sorted(distributions)
    for x, name_a in enumerate(names):
        for name_b in names[x + 1 :]:
            a, b = distributions[name_a], distributions[name_b]
            w = 1.0 - _between(a, b)
            out.append(Divergence(name_a, name_b, _mean(w), _mean_ci(w, n_boot, seed), int(w.size)))
    return out


def paired_alignment(
    rankings: Sequence[RankedList],
    item_prompt: Mapping,
    scores_a: Mapping,
    scores_b: Mapping,
    group: str,
    *,
    temperatures: tuple[float, float] = (0.5, 0.5),
    k: int = 5,
    prompts: Collection | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> PairedAlignment:
    """Is A (e.g. a steered head) better aligned with ``group`` than B (the pooled head)?

    ``diff = A_a - A_b`` over the group's prompts; each draw resamples prompts
    once for both. ``p_value`` is two-sided, as ``metrics.paired_comparison``.
    """
    mine = [r for r in rankings if r.group == group]
    da = position_distributions(
        mine, item_prompt, scores_a, temperature=temperatures[0], prompts=prompts
    )
    if len(da.annotators) < k:
        raise ValueError(f"group {group!r} has fewer than k = {k} annotators")
    db = position_distributions(
        mine, item_prompt, scores_b, temperature=temperatures[1], prompts=prompts
    )
    per_a, per_b = da.per_prompt_alignment(), db.per_prompt_alignment()
    diff, ci, p_value, n_prompts = paired_per_prompt(
        dict(zip(da.prompts, per_a.tolist(), strict=True)),
        dict(zip(db.prompts, per_b.tolist(), strict=True)),
        n_boot=n_boot,
        seed=seed,
    )
    return PairedAlignment(
        group=group,
        alignment_a=_mean(per_a),
        alignment_b=_mean(per_b),
        diff=diff,
        ci=ci,
        p_value=p_value,
        n_prompts=n_prompts,
        n_annotators=len(da.annotators),
        n_rankings=len(da.rankings),
        n_boot=n_boot,
    )


def paired_per_prompt(
    a: Mapping, b: Mapping, *, n_boot: int = 1000, seed: int = 0
) -> tuple[float, list[float] | None, float, int]:
    """``(diff, ci, p_value, n_prompts)`` of mean(a[u] - b[u]) over the prompts u both hold.

    ``a`` and ``b`` are per-prompt values (e.g. ``GroupPerspective.per_prompt`` of
    two versions for one group, or of two groups for one version); each draw
    resamples the shared prompts once for both; the p-value is two-sided
    (``metrics.bootstrap_p_value``).
    """
    shared = sorted(set(a) & set(b), key=repr)
    d = np.array([float(a[u]) - float(b[u]) for u in shared])
    draws = _group_resamples(np.arange(d.size), n_boot, seed) if d.size and n_boot > 0 else []
    diffs = np.array([_mean(d[i]) for i in draws])
    return _mean(d), _ci(diffs), bootstrap_p_value(diffs), int(d.size)
