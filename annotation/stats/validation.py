"""The statistics of a validation study: do one condition's images rank less stereotypical?

**Orientation (the DJ-PO card's).** An annotator orders a task's K images from
most stereotypical (position 0) to least (position K - 1); an image's *rank*
is ``position + 1``, in 1..K, so a **higher rank = less stereotypical**. The
card's "unoptimised M = 2.55, optimised M = 4.45" are mean ranks of this kind.

**Design (checked on input).** Every ranking holds K images (one K for the
whole study, K even) of one occupation, K/2 from each of two conditions (the
``baseline``, e.g. ``original``, and the ``treatment``, e.g. ``optimised``).
Each annotator's *mean rank per condition* is the mean rank of all the images
of that condition they ranked; the tests run on these per-annotator means.

* **Welch's t** (the card's test, ``welch``, ``welch_from_summary``): the two
  conditions' annotator means as independent samples, t > 0 when the treatment
  ranks higher, Welch-Satterthwaite df. *Caveat*: in this design the ranks of a
  ranking add up to K(K + 1)/2, so an annotator's two means add up to K + 1:
  the samples are perfectly negatively correlated (``report`` gives the
  correlation), not independent. Welch's standard error is then sqrt(2) too
  small and its t sqrt(2) times the paired t; at alpha 0.05 with 20 annotators
  it rejects about 17% of null studies (``benchmarks/validation_power.py``).
  It is reported so that a reader can set it beside the card's.
* **Paired t** and **Wilcoxon signed-rank** (``paired_t``, ``wilcoxon``) on the
  per-annotator differences ``treatment - baseline`` (scipy's defaults: zero
  differences dropped by Wilcoxon, exact p without ties, else the normal one).
* **Cluster bootstrap** (``cluster_bootstrap``): annotators and occupations
  resampled independently, with replacement, all ``n_boot`` draws at once; a
  ranking enters a draw (annotator count) x (occupation count) times. The
  statistic is the difference in mean rank over images (each ranked image
  weighs the same; equal to the difference of annotator means when every
  annotator ranked equally many tasks); percentile 95% interval
  (``bootstrap.percentile_interval``). Resampling both factors counts the
  ranking-level (annotator x occupation) variance about twice (Owen 2007, "The
  pigeonhole bootstrap"), so the interval is conservative: in the benchmark it
  excluded 0 in under 1% of null studies at a nominal 5%. It is the one test
  here that holds its level when occupations differ (the paired t treats the
  study's occupations as fixed and rejects 12% of such null studies), at the
  cost of power.
* **Effect sizes**: ``d_z`` = mean / SD of the per-annotator differences (the
  paired test's effect, the one the power analysis uses); ``d_pooled`` =
  difference of the condition means / the root mean square of the two
  conditions' annotator SDs (Cohen's d_s with equal n, comparable with
  between-subject studies; in the balanced design d_z = d_pooled / 2);
  **probability of superiority** = the share of (treatment image, baseline
  image) pairs within one ranking where the treatment image ranks higher,
  ties counted half (a ranking's positions are distinct, so none arise here).
  Intervals: d_z and d_pooled by resampling annotators, the probability of
  superiority by the two-way bootstrap.
* **Power**: ``power.py`` (scipy's noncentral t). The breakdowns and the
  assembled report: ``validation_report.py``.

Bad input raises ``ValidationDataError`` (a ``ValueError``, as the rest of
this library raises); a service translates it into the project's error.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import stats

from . import power
from .bootstrap import Estimate, percentile_interval
from .records import Annotator, TaskId


class ValidationDataError(ValueError):
    """Validation records that do not form a study these statistics can read."""


@dataclass(frozen=True)
class ValidationRecord:
    """One image in one annotator's ranking of a validation task.

    ``position``: 0 = most stereotypical .. ``k`` - 1 = least. ``group``: the
    annotator's demographics, ``{field: value}``.
    """

    annotator: Annotator
    occupation: str
    task_id: TaskId
    condition: str
    position: int
    k: int
    group: Mapping[str, str | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.k < 2 or not 0 <= self.position < self.k:
            raise ValidationDataError(
                f"task {self.task_id!r} by {self.annotator!r}: position {self.position} "
                f"is not in 0..K-1 for K = {self.k}"
            )

    @property
    def rank(self) -> int:
        """``position + 1``: 1..K, higher = less stereotypical (the card's orientation)."""
        return self.position + 1


@dataclass(frozen=True)
class Study:
    """Validation rankings as arrays: ranking ``r`` is by ``ann[r]`` of occupation ``occ[r]``.

    ``baseline_ranks`` and ``treatment_ranks``: ``(rankings, K/2)`` ranks 1..K.
    """

    baseline: str
    treatment: str
    k: int
    annotators: tuple[Hashable, ...]
    occupations: tuple[str, ...]
    ann: np.ndarray
    occ: np.ndarray
    baseline_ranks: np.ndarray
    treatment_ranks: np.ndarray

    def subset(self, keep: np.ndarray) -> Study:
        """The rankings where ``keep`` is true, annotators and occupations re-indexed."""
        a, ann = np.unique(self.ann[keep], return_inverse=True)
        o, occ = np.unique(self.occ[keep], return_inverse=True)
        return Study(
            self.baseline,
            self.treatment,
            self.k,
            tuple(self.annotators[i] for i in a),
            tuple(self.occupations[i] for i in o),
            ann,
            occ,
            self.baseline_ranks[keep],
            self.treatment_ranks[keep],
        )


def _ranking(key, rows: list[ValidationRecord], baseline: str, treatment: str) -> dict:
    where = f"task {key[1]!r} by {key[0]!r}"
    k = rows[0].k
    if any(r.k != k for r in rows) or len({r.occupation for r in rows}) > 1:
        raise ValidationDataError(f"{where}: its images disagree on K or occupation")
    if sorted(r.position for r in rows) != list(range(k)):
        raise ValidationDataError(
            f"{where}: positions {sorted(r.position for r in rows)} are not 0..{k - 1} once each "
            "(a record missing or repeated, or the task ranked twice?)"
        )
    ranks = {c: sorted(r.rank for r in rows if r.condition == c) for c in (baseline, treatment)}
    if len(ranks[baseline]) != len(ranks[treatment]):
        raise ValidationDataError(
            f"{where}: {len(ranks[treatment])} {treatment!r} and {len(ranks[baseline])} "
            f"{baseline!r} images; a validation task shows the two in equal numbers"
        )
    return {"k": k, "occupation": rows[0].occupation, **ranks}


def study(
    records: Iterable[ValidationRecord], *, baseline: str = "original", treatment: str = "optimised"
) -> Study:
    """Check the records form a two-condition validation study and hold them as arrays."""
    records = list(records)
    conditions = {r.condition for r in records}
    if conditions != {baseline, treatment}:
        raise ValidationDataError(
            f"a validation study compares {baseline!r} with {treatment!r}; "
            f"the records hold {sorted(conditions)}"
        )
    rankings: dict[tuple, list[ValidationRecord]] = defaultdict(list)
    for r in records:
        rankings[(r.annotator, r.task_id)].append(r)
    rows = {key: _ranking(key, rs, baseline, treatment) for key, rs in rankings.items()}
    ks = sorted({row["k"] for row in rows.values()})
    if len(ks) > 1:
        raise ValidationDataError(
            f"rankings of K = {ks}: mean ranks on different scales do not compare; "
            "report each K on its own"
        )
    keys = sorted(rows, key=lambda key: (str(key[0]), str(key[1])))
    annotators = tuple(sorted({key[0] for key in keys}, key=str))
    occupations = tuple(sorted({rows[key]["occupation"] for key in keys}))
    return Study(
        baseline,
        treatment,
        ks[0],
        annotators,
        occupations,
        np.array([annotators.index(key[0]) for key in keys]),
        np.array([occupations.index(rows[key]["occupation"]) for key in keys]),
        np.array([rows[key][baseline] for key in keys], dtype=np.float64),
        np.array([rows[key][treatment] for key in keys], dtype=np.float64),
    )


def annotator_means(s: Study) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per annotator (``s.annotators`` order): baseline and treatment mean rank, rankings."""
    n = np.bincount(s.ann, minlength=len(s.annotators))
    images = n * s.baseline_ranks.shape[1]
    base = np.bincount(s.ann, s.baseline_ranks.sum(1), len(s.annotators)) / images
    treat = np.bincount(s.ann, s.treatment_ranks.sum(1), len(s.annotators)) / images
    return base, treat, n


def _num(x):
    """A 0-d result as a float, a batch as an array."""
    return float(x) if np.ndim(x) == 0 else np.asarray(x, dtype=np.float64)


@dataclass(frozen=True)
class TTest:
    """A t-test: statistic, degrees of freedom, two-sided p, and the difference in means
    (treatment - baseline) with its 95% t-interval; arrays for a batch of studies."""

    t: float | np.ndarray
    df: float | np.ndarray
    p: float | np.ndarray
    difference: float | np.ndarray
    ci_low: float | np.ndarray
    ci_high: float | np.ndarray

    def text(self) -> str:
        """APA style, e.g. ``t(31.34) = 7.02, p < .001``."""
        p = "p < .001" if self.p < 0.001 else f"p = {self.p:.3f}".replace("0.", ".", 1)
        df = f"{self.df:.0f}" if float(self.df).is_integer() else f"{self.df:.2f}"
        return f"t({df}) = {self.t:.2f}, {p}"

    def as_dict(self) -> dict:
        """Plain dict with the text (for JSON)."""
        return {**asdict(self), "text": self.text()}


def _from_scipy(r, difference) -> TTest:
    ci = r.confidence_interval(0.95)
    return TTest(*map(_num, (r.statistic, r.df, r.pvalue, difference, ci.low, ci.high)))


def welch(baseline, treatment) -> TTest:
    """Welch's t-test of treatment vs baseline annotator means (last axis; t > 0: treatment up)."""
    r = stats.ttest_ind(treatment, baseline, axis=-1, equal_var=False)
    return _from_scipy(r, np.mean(treatment, -1) - np.mean(baseline, -1))


def welch_from_summary(
    baseline_mean: float,
    baseline_sd: float,
    baseline_n: int,
    treatment_mean: float,
    treatment_sd: float,
    treatment_n: int,
) -> TTest:
    """Welch's t-test from each condition's mean, SD and n (as a paper reports them)."""
    r = stats.ttest_ind_from_stats(
        treatment_mean,
        treatment_sd,
        treatment_n,
        baseline_mean,
        baseline_sd,
        baseline_n,
        equal_var=False,
    )
    df = power.welch_df(treatment_sd, treatment_n, baseline_sd, baseline_n)
    diff = treatment_mean - baseline_mean
    half = stats.t.ppf(0.975, df) * np.hypot(
        treatment_sd / treatment_n**0.5, baseline_sd / baseline_n**0.5
    )
    return TTest(_num(r.statistic), _num(df), _num(r.pvalue), diff, diff - half, diff + half)


def paired_t(baseline, treatment) -> TTest:
    """Paired t-test on per-annotator differences ``treatment - baseline`` (last axis)."""
    r = stats.ttest_rel(treatment, baseline, axis=-1)
    return _from_scipy(r, np.mean(np.asarray(treatment) - np.asarray(baseline), -1))


def wilcoxon(baseline, treatment) -> dict:
    """Wilcoxon signed-rank test on per-annotator differences (last axis): statistic and p."""
    r = stats.wilcoxon(np.asarray(treatment) - np.asarray(baseline), axis=-1)
    return {"statistic": _num(r.statistic), "p": _num(r.pvalue)}


def summary(means: np.ndarray) -> dict:
    """n, mean, SD (n - 1) of annotator means, and the mean's 95% t-interval over annotators."""
    n = means.size
    mean, sd = means.mean(), means.std(ddof=1) if n > 1 else float("nan")
    half = stats.t.ppf(0.975, n - 1) * sd / np.sqrt(n) if n > 1 else float("nan")
    return {"n": n, "mean": mean, "sd": sd, "ci_low": mean - half, "ci_high": mean + half}


def _counts(rng: np.random.Generator, n: int, n_boot: int) -> np.ndarray:
    """``(n_boot, n)``: how often each of ``n`` clusters is drawn in each resample."""
    draws = rng.integers(0, n, size=(n_boot, n)) + n * np.arange(n_boot)[:, None]
    return np.bincount(draws.ravel(), minlength=n_boot * n).reshape(n_boot, n).astype(np.float64)


def _wins(s: Study) -> np.ndarray:
    """Per ranking: (treatment, baseline) pairs where the treatment ranks higher, ties half."""
    diff = s.treatment_ranks[:, :, None] - s.baseline_ranks[:, None, :]
    return ((np.sign(diff) + 1) / 2).sum(axis=(1, 2))


def _estimate(v: np.ndarray, n: int, n_boot: int) -> Estimate:
    """``v[0]`` (the data) with the percentile interval of the draws ``v[1:]``."""
    v = np.where(np.isfinite(v), v, np.nan)
    ci = percentile_interval(v[1:]) if n_boot else None
    return Estimate(float(v[0]), *(ci or (None, None)), n, n_boot)


def _check_boot(n_boot: int) -> None:
    if n_boot < 0:
        raise ValidationDataError(f"n_boot must be >= 0, got {n_boot}")


def cluster_bootstrap(s: Study, *, n_boot: int = 2000, seed: int = 0) -> dict[str, Estimate]:
    """Difference in mean rank, each condition's mean rank and the probability of superiority,
    with intervals from resampling annotators and occupations (``n``: annotators)."""
    _check_boot(n_boot)
    rng = np.random.default_rng(seed)
    a, o = len(s.annotators), len(s.occupations)
    wa = np.vstack([np.ones(a), _counts(rng, a, n_boot)])  # row 0: the data itself
    wo = np.vstack([np.ones(o), _counts(rng, o, n_boot)])

    def total(per_ranking: np.ndarray) -> np.ndarray:
        cells = np.zeros((a, o))
        np.add.at(cells, (s.ann, s.occ), per_ranking)
        # sum_a sum_o wa[b, a] cells[a, o] wo[b, o]: a matrix product first (BLAS), not
        # one pass over draws x annotators x occupations
        return ((wa @ cells) * wo).sum(axis=1)

    m = s.baseline_ranks.shape[1]
    with np.errstate(invalid="ignore", divide="ignore"):
        images = total(np.full(len(s.ann), float(m)))
        base = total(s.baseline_ranks.sum(1)) / images
        treat = total(s.treatment_ranks.sum(1)) / images
        ps = total(_wins(s)) / (images * m)

    return {
        "difference": _estimate(treat - base, a, n_boot),
        "mean_rank": {
            s.baseline: _estimate(base, a, n_boot),
            s.treatment: _estimate(treat, a, n_boot),
        },
        "probability_of_superiority": _estimate(ps, a, n_boot),
    }


def effect_sizes(s: Study, *, n_boot: int = 2000, seed: int = 0) -> dict[str, Estimate]:
    """``d_z`` and ``d_pooled`` of the annotator means, intervals from resampling annotators."""
    _check_boot(n_boot)
    base, treat, _ = annotator_means(s)
    rng = np.random.default_rng(seed)
    idx = np.vstack([np.arange(base.size), rng.integers(0, base.size, (n_boot, base.size))])
    b, t = base[idx], treat[idx]
    with np.errstate(invalid="ignore", divide="ignore"):
        d = t - b
        d_z = d.mean(1) / d.std(1, ddof=1)
        d_pooled = d.mean(1) / np.sqrt((b.var(1, ddof=1) + t.var(1, ddof=1)) / 2)

    return {
        "d_z": _estimate(d_z, base.size, n_boot),
        "d_pooled": _estimate(d_pooled, base.size, n_boot),
    }
