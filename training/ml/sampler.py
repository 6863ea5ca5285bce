"""Active sampling: which open ranking tasks would teach the head the most (issue 18).

Model. The head scores an item with embedding ``x`` (d,) (d = 384 or 768, the
frozen, cached embeddings) as ``s = w . x + b``. A ranking is read as a
Plackett-Luce draw, as in ``alignment.py``: from least to most stereotypical
(the stored ranking reversed), each draw with weights ``exp(u)``, utilities
``u = s / T``, T the training temperature (0.5 by default, the listwise
loss's). For the draw order ``pi`` of K items with remaining sets
``R_j = {pi_j, ..., pi_{K-1}}`` and ``p_R = softmax(u_R)``:

* likelihood ``P(pi) = prod_j p_{R_j}(pi_j)``; adding b to every score adds
  ``b / T`` to every utility and cancels in each softmax, so it does not
  depend on b: the parameter is ``w`` (d,) alone;
* score ``d log P / dw = (1 / T) sum_j (x_{pi_j} - E_{p_{R_j}}[x])``;
* observed information ``J(pi) = -d^2 log P / dw^2 = (1 / T^2) sum_j Cov_{p_{R_j}}(x)``,
  which depends on ``pi`` through its remaining sets only;
* Fisher information ``F = E_pi[J(pi)] = (1 / T^2) sum_{|R| >= 2} q(R) Cov_{p_R}(x)``,
  ``q(R)`` the probability that R is what remains after ``K - |R|`` draws.
  In matrix form ``F = X^T A X / T^2`` with the K x K kernel
  ``A = sum_R q(R) (diag(p_R) - p_R p_R^T)`` (p_R zero outside R): ``A 1 = 0``
  (the invariance to b), so F has rank at most K - 1.

``q`` follows the exact recursion ``q(all) = 1``,
``q(R \\ {i}) += q(R) p_R(i)`` over the 2^K subsets (64 for K = 6), instead of
the K! orders (720): exact, and vectorised over tasks.

The posterior over w is Laplace's: precision ``P = prior + sum over the rankings
so far of J(pi)`` at the current head (the active or latest version's). A task's
value is the D-optimal gain ``log det(P + F_t) - log det(P)``
(Shen, Sun & Ton, "Active Reward Modeling", ICML 2025; Mukherjee et al.,
NeurIPS 2024, optimal designs for Plackett-Luce list feedback). With
``F_t = U_t U_t^T``, ``U_t = X_t^T A_t^{1/2} / T`` (d, K), the determinant lemma
gives ``log det(I_K + U_t^T P^{-1} U_t)``: K x K determinants only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import linalg, sparse, special

from training.ml.errors import MLError


class SamplerError(MLError, ValueError):
    """Bad input to the sampler (also a ``ValueError``)."""


DEFAULT_TEMPERATURE = 0.5
MAX_K = 12  # the subset recursion visits 2^K subsets
_CHUNK = 50_000  # rankings whose kernels are held at once (50,000 x K^2 values)


def _check_temperature(temperature: float) -> None:
    ok = isinstance(temperature, int | float) and math.isfinite(temperature)
    if not ok or temperature <= 0:
        raise SamplerError(f"temperature must be a positive number, not {temperature!r}")


def _check_w(w, d: int | None = None) -> np.ndarray:
    w = np.asarray(w, dtype=np.float64)
    if w.ndim != 1 or not np.isfinite(w).all():
        raise SamplerError(f"w must be a finite vector (d,), not shape {w.shape}")
    if d is not None and w.shape[0] != d:
        raise SamplerError(f"w has {w.shape[0]} weights but the embeddings have d = {d}")
    return w


def _check_embeddings(x, name: str, ndim: int) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != ndim or not np.isfinite(x).all():
        raise SamplerError(f"{name} must be a finite array with {ndim} dimensions, not {x.shape}")
    return x


def pl_kernel(u) -> np.ndarray:
    """``A`` (n, K, K) with ``Fisher = X^T A X`` for utilities ``u`` (n, K) (T = 1).

    ``A = sum_{R, |R| >= 2} q(R) (diag(p_R) - p_R p_R^T)`` over the subsets R of
    the K items, ``p_R = softmax(u_R)``, ``q(R)`` from the recursion in the
    module docstring. Symmetric, positive semi-definite, rows sum to 0.
    """
    u = np.asarray(u, dtype=np.float64)
    if u.ndim != 2 or not np.isfinite(u).all():
        raise SamplerError(f"utilities must be a finite (n, K) array, not {u.shape}")
    n, k = u.shape
    if k > MAX_K:
        raise SamplerError(f"the Fisher recursion visits 2^K subsets; K = {k} is more than {MAX_K}")
    a = np.zeros((n, k, k))
    q = np.zeros((n, 1 << k))
    q[:, -1] = 1.0
    # a superset's bitmask is larger than its subsets': descending order visits R before R \ {i}
    for mask in range((1 << k) - 1, 0, -1):
        members = [i for i in range(k) if mask >> i & 1]
        if len(members) < 2:
            continue
        p = special.softmax(u[:, members], axis=1)  # (n, |R|)
        weight = q[:, mask, None]
        cov = -p[:, :, None] * p[:, None, :]
        cov[:, np.arange(len(members)), np.arange(len(members))] += p
        rows, cols = np.ix_(members, members)
        a[:, rows, cols] += weight[:, :, None] * cov
        for col, i in enumerate(members):
            q[:, mask ^ (1 << i)] += q[:, mask] * p[:, col]
    return a


def pl_fisher(x, w, *, temperature: float = DEFAULT_TEMPERATURE) -> np.ndarray:
    """Expected Fisher information (d, d) about w of one full ranking of the items ``x`` (K, d).

    ``F = X^T A(u) X / T^2`` with ``u = X w / T`` (``pl_kernel``): exact, by the
    subset recursion.
    """
    _check_temperature(temperature)
    x = _check_embeddings(x, "x", 2)
    w = _check_w(w, x.shape[1])
    a = pl_kernel((x @ w / temperature)[None, :])[0]
    return x.T @ a @ x / temperature**2


def _prior_matrix(prior, d: int) -> np.ndarray:
    if np.isscalar(prior):
        if not (math.isfinite(prior) and prior > 0):
            raise SamplerError(f"a scalar prior precision must be positive, not {prior!r}")
        return float(prior) * np.eye(d)
    p = np.asarray(prior, dtype=np.float64)
    if p.shape != (d, d) or not np.isfinite(p).all() or not np.allclose(p, p.T):
        raise SamplerError(f"the prior precision must be a positive number or symmetric ({d}, {d})")
    return p


def laplace_precision(
    rankings: Sequence[Sequence[int]],
    embeddings,
    w,
    prior=1.0,
    *,
    temperature: float = DEFAULT_TEMPERATURE,
) -> np.ndarray:
    """Posterior precision (d, d) of w: ``prior + sum_r J(pi_r)`` at ``w``.

    ``rankings``: each a sequence of row indices into ``embeddings`` (N, d) in
    the stored order, most stereotypical first (its reverse is the draw order);
    rankings may have different lengths. ``prior``: a positive number
    (``prior * I``) or a (d, d) matrix. ``J(pi) = (1 / T^2) sum_j Cov_{p_{R_j}}(x)``
    over the draw's remaining sets (module docstring).
    """
    _check_temperature(temperature)
    emb = _check_embeddings(embeddings, "embeddings", 2)
    n_items, d = emb.shape
    w = _check_w(w, d)
    total = _prior_matrix(prior, d).copy()
    by_length: dict[int, list[np.ndarray]] = {}
    for number, ranking in enumerate(rankings):
        idx = np.asarray(ranking)
        if idx.ndim != 1 or (idx.size and not np.issubdtype(idx.dtype, np.integer)):
            raise SamplerError(f"ranking {number} must be a sequence of item indices")
        if idx.size and (idx.min() < 0 or idx.max() >= n_items):
            raise SamplerError(f"ranking {number} points outside the {n_items} embeddings")
        if len(set(idx.tolist())) != idx.size:
            raise SamplerError(f"ranking {number} holds an item twice")
        if idx.size >= 2:
            by_length.setdefault(idx.size, []).append(idx[::-1])
    u_all = emb @ w / temperature
    # sum_r X_r^T A_r X_r = E^T M E with M (N, N) the kernels scattered onto the items:
    # its cost and memory follow the pairs of items ranked together, not rankings x d^2.
    kernels = sparse.csr_matrix((n_items, n_items))
    for k, group in by_length.items():
        order = np.stack(group)  # (n, K) in draw order
        for start in range(0, len(order), _CHUNK):
            rows = order[start : start + _CHUNK]
            u = u_all[rows]
            a = np.zeros((rows.shape[0], k, k))
            for j in range(k - 1):  # stage j: the softmax over draw positions j..K-1
                p = special.softmax(u[:, j:], axis=1)
                block = -p[:, :, None] * p[:, None, :]
                block[:, np.arange(k - j), np.arange(k - j)] += p
                a[:, j:, j:] += block
            left = np.broadcast_to(rows[:, :, None], a.shape).ravel()
            right = np.broadcast_to(rows[:, None, :], a.shape).ravel()
            kernels = (
                kernels
                + sparse.coo_matrix((a.ravel(), (left, right)), shape=(n_items, n_items)).tocsr()
            )
    total += emb.T @ (kernels @ emb) / (temperature**2)
    return (total + total.T) / 2


@dataclass(frozen=True)
class Candidate:
    """An open task: its items' embeddings (K, d) and its occupation."""

    embeddings: np.ndarray
    occupation: str


@dataclass(frozen=True)
class Priorities:
    """One row per task, in the order given.

    ``priority``: higher = handed out sooner (``n_tasks - place``, so n..1);
    ``gain``: the log-det gain at the precision given, before any pick;
    ``explored``: picked by the exploration share rather than by the gain.
    """

    priority: np.ndarray
    gain: np.ndarray
    explored: np.ndarray


def _square_roots(a: np.ndarray) -> np.ndarray:
    vals, vecs = np.linalg.eigh(a)
    return (vecs * np.sqrt(np.clip(vals, 0.0, None))[:, None, :]) @ vecs.transpose(0, 2, 1)


def _log_det_gains(g: np.ndarray) -> np.ndarray:
    return np.linalg.slogdet(np.eye(g.shape[-1]) + g)[1]


def _is_exploration(pick: int, share: float) -> bool:
    """Every 1/share-th pick: floor((i + 1) s) > floor(i s), floor(n s) of the first n."""
    return math.floor((pick + 1) * share + 1e-12) > math.floor(pick * share + 1e-12)


def d_optimal_priorities(
    tasks: Sequence[Candidate],
    precision,
    w,
    *,
    batch: int,
    exploration: float = 0.2,
    rng: np.random.Generator | int = 0,
    coverage: Mapping[str, int] | None = None,
    temperature: float = DEFAULT_TEMPERATURE,
) -> Priorities:
    """Priorities for the open ``tasks``: a greedy D-optimal batch, then the rest by gain.

    Gain of task t at precision P (d, d): ``log det(I_K + S_t X_t P^{-1} X_t^T S_t)``,
    ``S_t = A_t^{1/2} / T`` (K, K), ``X_t`` (K, d); equal to
    ``log det(P + F_t) - log det(P)``. ``batch`` picks are made one at a time;
    after each, ``P += F_t`` (Woodbury on P^{-1}, a rank-K update of every
    task's K x K matrix), so tasks that teach the same thing as one already
    handed out fall back and concurrent annotators get different tasks. Pick i
    is an exploration pick when ``floor((i + 1) e) > floor(i e)`` (a share e of
    the batch): uniformly among the occupations with open tasks that have the
    fewest rankings (``coverage`` plus this batch's picks), then a task of it
    uniformly. After the batch, the other tasks follow by their gain at the
    updated P. Ties go to the earlier task; the same ``rng`` seed gives the
    same priorities.
    """
    _check_temperature(temperature)
    if not isinstance(batch, int) or batch < 0:
        raise SamplerError(f"batch must be a non-negative integer, not {batch!r}")
    if not (isinstance(exploration, int | float) and 0 <= exploration <= 1):
        raise SamplerError(f"exploration must be a share in [0, 1], not {exploration!r}")
    prec = _check_embeddings(precision, "precision", 2)
    d = prec.shape[0]
    w = _check_w(w, d)
    if prec.shape != (d, d):
        raise SamplerError(f"precision must be square, not {prec.shape}")
    n = len(tasks)
    if n == 0:
        return Priorities(np.zeros(0), np.zeros(0), np.zeros(0, dtype=bool))
    shapes = {np.shape(t.embeddings) for t in tasks}
    if len(shapes) != 1:
        raise SamplerError(f"every task must have the same (K, d) embeddings, not {sorted(shapes)}")
    x = _check_embeddings(np.stack([t.embeddings for t in tasks]), "task embeddings", 3)
    if x.shape[2] != d:
        raise SamplerError(f"task embeddings have d = {x.shape[2]}, the precision {d}")
    try:
        p_inv = linalg.cho_solve(linalg.cho_factor(prec), np.eye(d))
    except linalg.LinAlgError as exc:
        raise SamplerError("the precision must be positive definite") from exc
    rng = np.random.default_rng(rng)
    k = x.shape[1]
    s = _square_roots(pl_kernel(x @ w / temperature)) / temperature  # (n, K, K)
    xs = np.einsum("nkl,nld->nkd", s, x)  # S_t X_t: F_t = xs_t^T xs_t
    flat = xs.reshape(-1, d)  # one matrix product for all tasks, not n small ones
    g = np.einsum("nkd,nld->nkl", (flat @ p_inv).reshape(xs.shape), xs)
    gain = _log_det_gains(g)
    initial = gain.copy()
    counts = {t.occupation: 0 for t in tasks}
    for occ, c in (coverage or {}).items():
        if occ in counts:
            counts[occ] += c
    occupations = np.array([t.occupation for t in tasks])
    open_ = np.ones(n, dtype=bool)
    explored = np.zeros(n, dtype=bool)
    order: list[int] = []
    for pick in range(min(batch, n)):
        if _is_exploration(pick, exploration):
            live = sorted({str(o) for o in occupations[open_]})
            least = min(counts[o] for o in live)
            occ = rng.choice([o for o in live if counts[o] == least])
            t = int(rng.choice(np.flatnonzero(open_ & (occupations == occ))))
            explored[t] = True
        else:
            t = int(np.flatnonzero(open_)[np.argmax(gain[open_])])
        order.append(t)
        open_[t] = False
        counts[str(occupations[t])] += 1
        v = p_inv @ xs[t].T  # (d, K)
        m_inv = np.linalg.inv(np.eye(k) + g[t])
        p_inv = p_inv - v @ m_inv @ v.T
        p_inv = (p_inv + p_inv.T) / 2
        c = (flat @ v).reshape(n, k, k)
        g = g - c @ m_inv @ c.transpose(0, 2, 1)
        gain = _log_det_gains(g)
    rest = np.flatnonzero(open_)
    order.extend(rest[np.argsort(-gain[rest], kind="stable")].tolist())
    priority = np.empty(n)
    priority[order] = n - np.arange(n)
    return Priorities(priority, initial, explored)
