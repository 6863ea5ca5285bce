"""Whose opinions does a reward model reward? Position distributions, W1 and JS.

OpinionQA's alignment (Santurkar et al. 2023, arXiv 2303.17548) of two opinion
distributions over ordinal options 0..N-1, ``A = 1 - W1 / (N - 1)``, adapted to
rankings as Reward Model Perspectives (arXiv 2510.06391, EMNLP 2025) adapts it
to reward models (a softmax over rewards). The unit is a prompt; the options are
rank positions. Orientation, as everywhere in stereorank: position 0 = most
stereotypical, K-1 = least stereotypical (label 1, the highest reward).

* Plackett-Luce: the model's ranking is drawn from least to most stereotypical,
  one item at a time with weights ``exp(s / T)``; the first draw takes position
  K-1. Its first-draw probabilities are ``softmax(s / T)``, the distribution
  the listwise loss trains, so T is the training temperature (0.5).
* Mixed K: a position p of a ranking of K items is read as its label
  ``p / (K - 1)`` in [0, 1]; distributions live on the grid ``j / L``, L the
  least common multiple of the K - 1 in the data, and ``A = 1 - W1 / L`` is
  ``1 - W1`` on [0, 1]. With a single K this is exactly ``1 - W1 / (K - 1)``.
* First choice: per occupation, the distribution over its prompts of the item
  put last (least stereotypical), among the ranking's items of the prompts
  under study (Plackett-Luce's choice among a subset is the softmax over the
  subset, so the model's side stays exact); compared by Jensen-Shannon distance
  (base 2, in [0, 1]), as the paper does for non-ordinal answers.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections import defaultdict
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special

MAX_ENUMERATED_K = 8


@dataclass(frozen=True)
class RankedList:
    """One annotator's ranking of one task: ``items`` from most (0) to least stereotypical.

    ``group`` is the annotator's value of the demographic field under study
    (``None`` when unanswered); a task holds the items of one ``occupation``.
    """

    ranking_id: Hashable
    annotator: Hashable
    items: tuple[Hashable, ...]
    group: str | None
    occupation: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "items", tuple(self.items))
        if len(set(self.items)) != len(self.items):
            raise ValueError(f"ranking {self.ranking_id!r} holds an item twice")


def check_temperature(temperature: float) -> None:
    """A clear error unless T is a positive finite number."""
    ok = isinstance(temperature, int | float) and math.isfinite(temperature)
    if not ok or temperature <= 0:
        raise ValueError(f"temperature must be a positive number, not {temperature!r}")


@functools.cache
def _enumeration(k: int) -> tuple[np.ndarray, np.ndarray]:
    """All K! draw orders, as (K, K!) (column = items in draw order), and their indicator.

    ``indicator[j, i * K + p]`` is 1 when order j puts item i at position p.
    """
    perms = np.array(list(itertools.permutations(range(k))), dtype=np.intp).reshape(-1, k)
    indicator = np.zeros((perms.shape[0], k * k))
    rows = np.repeat(np.arange(perms.shape[0]), k)
    # the item drawn at step t lands at position K-1-t
    indicator[rows, (perms * k + (k - 1 - np.arange(k))).ravel()] = 1.0
    return np.ascontiguousarray(perms.T), indicator


def plackett_luce_position_marginals(scores, temperature: float = 0.5) -> np.ndarray:
    """``P[i, p]``: probability that item i lands at position p (0 = most stereotypical).

    Draw order pi (pi_0 takes position K-1, the last draw position 0):
    ``P(pi) = prod_t exp(s_pi_t / T) / sum_{u >= t} exp(s_pi_u / T)``, summed
    exactly over all K! orders. Computed over the 2^K sets of items drawn so far
    (``_marginals_by_drawn_sets``), or, when the scores / T span 700 or more (where
    plain exponentials would underflow), by enumerating the orders in log space;
    K is at most 8. Takes scores of shape (K,) or (n, K) and returns (K, K) or
    (n, K, K); rows and columns sum to 1.
    """
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim not in (1, 2) or s.shape[-1] < 1:
        raise ValueError(f"scores must have shape (K,) or (n, K), not {s.shape}")
    k = s.shape[-1]
    if k > MAX_ENUMERATED_K:
        raise ValueError(
            f"exact Plackett-Luce marginals enumerate K! orders; K = {k} is more than "
            f"{MAX_ENUMERATED_K}"
        )
    check_temperature(temperature)
    if not np.isfinite(s).all():
        raise ValueError("scores must be finite")
    flat = s.reshape(-1, k) / temperature
    out = np.empty((flat.shape[0], k, k))
    chunk = max(1, 4_000_000 // (1 << k))
    for start in range(0, flat.shape[0], chunk):
        rows = flat[start : start + chunk]
        if np.ptp(rows) < 700:  # exp(z - max) cannot underflow: plain sums are exact
            out[start : start + chunk] = _marginals_by_drawn_sets(np.exp(rows - rows.max()))
        else:
            out[start : start + chunk] = _marginals_in_log_space(rows)
    return out.reshape(s.shape[:-1] + (k, k))


@functools.cache
def _drawn_sets(k: int) -> tuple[np.ndarray, np.ndarray]:
    """The 2^K sets of items (bit i = item i), as a (2^K, K) membership matrix, and the
    position the next draw takes from each set (K - 1 - its size)."""
    members = (np.arange(1 << k)[:, None] >> np.arange(k)) & 1
    return members, k - 1 - members.sum(axis=1)


def _marginals_by_drawn_sets(w: np.ndarray) -> np.ndarray:
    """(n, K) positive weights -> (n, K, K) marginals, by dynamic programming over the
    set S of items drawn so far (each set after all its subsets, in numeric order):
    ``f(S)`` is the probability that the first |S| draws are S in some order; from S,
    item i is drawn with probability ``w_i / (sum of the weights not in S)``, taking
    position ``K - 1 - |S|``. 2^K K steps per ranking, against K! K for the orders;
    the remaining weight is summed, never subtracted, so nothing cancels."""
    n, k = w.shape
    members, position = _drawn_sets(k)
    wt = np.ascontiguousarray(w.T)  # (K, n)
    remaining = (1 - members) @ wt  # (2^K, n)
    reach = np.zeros((1 << k, n))
    reach[0] = 1.0
    out = np.zeros((k, k, n))
    for drawn in range((1 << k) - 1):
        share = reach[drawn] / remaining[drawn]
        for i in np.flatnonzero(members[drawn] == 0):
            step = share * wt[i]
            out[i, position[drawn]] += step
            reach[drawn | 1 << i] += step
    return out.transpose(2, 0, 1)


def _marginals_in_log_space(z: np.ndarray) -> np.ndarray:
    """(n, K) scores / T spanning 700 or more -> (n, K, K), every order enumerated."""
    n, k = z.shape
    perms, indicator = _enumeration(k)
    out = np.empty((n, k * k))
    chunk = max(1, 2_000_000 // perms.size)
    for start in range(0, n, chunk):
        steps = z[start : start + chunk][:, perms]  # (c, K, K!): step t of each order
        log_left = np.logaddexp.accumulate(steps[:, ::-1], axis=1)[:, ::-1]
        out[start : start + chunk] = np.exp((steps - log_left).sum(axis=1)) @ indicator
    return out.reshape(n, k, k)


def _distributions(p, q) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(p, dtype=np.float64)
    b = np.asarray(q, dtype=np.float64)
    if a.shape != b.shape or a.ndim == 0 or a.shape[-1] < 1:
        raise ValueError(f"distributions must share a shape (..., N), not {a.shape}, {b.shape}")
    for x in (a, b):
        if (x < 0).any() or not np.allclose(x.sum(axis=-1), 1.0, atol=1e-9):
            raise ValueError("distributions must be non-negative and sum to 1")
    return a, b


def wasserstein_1(p, q) -> np.ndarray | float:
    """W1 between distributions on the points 0, 1, ..., N-1 (row-wise on (..., N)).

    ``W1 = sum_{j < N-1} |F_p(j) - F_q(j)|``, F the cumulative sums; at most N - 1.
    """
    a, b = _distributions(p, q)
    w = np.abs(np.cumsum(a - b, axis=-1)[..., :-1]).sum(axis=-1)
    return float(w) if w.ndim == 0 else w


def jensen_shannon_distance(p, q) -> np.ndarray | float:
    """Jensen-Shannon distance, base 2, row-wise: ``sqrt((KL(p||m) + KL(q||m)) / 2)``, m = mean.

    In [0, 1]: 0 for equal distributions, 1 for disjoint supports.
    """
    a, b = _distributions(p, q)
    m = (a + b) / 2
    jsd = (special.rel_entr(a, m).sum(axis=-1) + special.rel_entr(b, m).sum(axis=-1)) / 2
    d = np.sqrt(np.clip(jsd / np.log(2), 0.0, 1.0))
    return float(d) if d.ndim == 0 else d


def alignment(p, q) -> np.ndarray | float:
    """OpinionQA's per-question alignment ``1 - W1 / (N - 1)`` (1 for equal distributions)."""
    a, _ = _distributions(p, q)
    n = a.shape[-1]
    if n < 2:
        raise ValueError("alignment needs at least two options")
    return 1.0 - wasserstein_1(p, q) / (n - 1)


@dataclass(frozen=True)
class PositionDistributions:
    """Per prompt, where its items landed, as distributions on the grid ``j / L``, j = 0..L.

    ``human[u]`` is the share of the prompt's placements at each grid point;
    ``model[u]`` (when scores were given) the mean Plackett-Luce marginal of the
    prompt's item over the same rankings. ``placements[u]`` counts them.
    """

    prompts: list
    occupations: list[str]
    human: np.ndarray
    model: np.ndarray | None
    placements: np.ndarray
    annotators: frozenset
    rankings: frozenset

    def per_prompt_alignment(self) -> np.ndarray:
        """Per-prompt ``1 - W1 / L`` of ``human`` against the model."""
        return np.asarray(alignment(self.human, self.model))


def _prompt_occupations(rankings: Iterable[RankedList], item_prompt: Mapping) -> dict:
    occupation: dict = {}
    for r in rankings:
        for item in r.items:
            if item not in item_prompt:
                raise ValueError(f"item {item!r} of ranking {r.ranking_id!r} has no prompt")
            prompt = item_prompt[item]
            if occupation.setdefault(prompt, r.occupation) != r.occupation:
                raise ValueError(f"prompt {prompt!r} appears under two occupations")
    return occupation


def _score_matrix(item_lists: Iterable[Sequence], scores: Mapping) -> np.ndarray:
    try:
        return np.array([[float(scores[i]) for i in items] for items in item_lists])
    except KeyError as exc:
        raise ValueError(f"no score for item {exc.args[0]!r}") from None


def grid_size(rankings: Iterable[RankedList]) -> int:
    """L: the least common multiple of K - 1 over the rankings (2 or more items)."""
    return math.lcm(*{len(r.items) - 1 for r in rankings if len(r.items) >= 2} or {1})


def position_distributions(
    rankings: Sequence[RankedList],
    item_prompt: Mapping,
    scores: Mapping | None = None,
    *,
    temperature: float = 0.5,
    prompts: Collection | None = None,
    grid: int | None = None,
) -> PositionDistributions:
    """Each prompt's position distribution in ``rankings`` (and the model's, given ``scores``).

    Only prompts in ``prompts`` (default: all) are units; a ranking's other items
    still shape the model's marginals. Rankings of fewer than 2 items say nothing
    about order and are skipped. ``grid`` defaults to ``grid_size(rankings)``.
    """
    rankings = [r for r in rankings if len(r.items) >= 2]
    occupation = _prompt_occupations(rankings, item_prompt)
    units = sorted(p for p in occupation if prompts is None or p in prompts)
    index = {p: j for j, p in enumerate(units)}
    L = grid or grid_size(rankings)
    human = np.zeros((len(units), L + 1))
    model = np.zeros_like(human) if scores is not None else None
    by_k: dict[int, list[RankedList]] = defaultdict(list)
    for r in rankings:
        by_k[len(r.items)].append(r)
    for k, group in by_k.items():
        if L % (k - 1):
            raise ValueError(f"grid {L} cannot place rankings of {k} items")
        cols = np.arange(k) * (L // (k - 1))
        unit = np.array([index.get(item_prompt[i], -1) for r in group for i in r.items])
        keep = unit >= 0
        pos = np.tile(np.arange(k), len(group))
        np.add.at(human, (unit[keep], cols[pos[keep]]), 1.0)
        if model is not None:
            marginals = plackett_luce_position_marginals(
                _score_matrix((r.items for r in group), scores), temperature
            )
            rows = marginals.reshape(-1, k)[keep]
            np.add.at(model, (unit[keep][:, None], cols[None, :]), rows)
    placements = human.sum(axis=1)
    used = [r for r in rankings if any(item_prompt[i] in index for i in r.items)]
    return PositionDistributions(
        prompts=units,
        occupations=[occupation[p] for p in units],
        human=human / placements[:, None],
        model=None if model is None else model / placements[:, None],
        placements=placements,
        annotators=frozenset(r.annotator for r in used),
        rankings=frozenset(r.ranking_id for r in used),
    )


def first_choice_distributions(
    rankings: Sequence[RankedList],
    item_prompt: Mapping,
    scores: Mapping,
    *,
    temperature: float = 0.5,
    prompts: Collection | None = None,
) -> dict[str, tuple[list, np.ndarray, np.ndarray]]:
    """Per occupation: its prompts, the human and the model first-choice distributions.

    Within each ranking, the choice is among its items of the prompts under study
    (at least two): the human picked the one placed last; the model's choice
    probabilities are ``softmax(s / T)`` over them (Plackett-Luce's first draw).
    """
    check_temperature(temperature)
    _prompt_occupations(rankings, item_prompt)
    human: dict = defaultdict(lambda: defaultdict(float))
    model: dict = defaultdict(lambda: defaultdict(float))
    for r in rankings:
        chosen = [i for i in r.items if prompts is None or item_prompt[i] in prompts]
        if len(chosen) < 2:
            continue
        human[r.occupation][item_prompt[chosen[-1]]] += 1.0
        s = _score_matrix([chosen], scores)[0]
        for item, prob in zip(chosen, special.softmax(s / temperature), strict=True):
            model[r.occupation][item_prompt[item]] += prob
    out = {}
    for occ in sorted(model):
        options = sorted(model[occ])
        h = np.array([human[occ][p] for p in options])
        m = np.array([model[occ][p] for p in options])
        out[occ] = (options, h / h.sum(), m / m.sum())
    return out


def item_labels(rankings: Iterable[RankedList]) -> dict:
    """``{item: mean position / (K - 1)}`` over the rankings, as the snapshot's labels."""
    sums: dict = defaultdict(float)
    counts: dict = defaultdict(int)
    for r in rankings:
        k = len(r.items)
        for position, item in enumerate(r.items if k >= 2 else ()):
            sums[item] += position / (k - 1)
            counts[item] += 1
    return {item: sums[item] / counts[item] for item in counts}
