"""Paraphrase augmentation: more texts per labelled prompt, filtered for quality.

Method. A backend proposes candidates for each original prompt, a few more
than the ``n`` asked for (``oversample``): the offline backend by rule-based
rewrites (``offline``: new lead-ins, reordered clauses, seeded by the
original), the OpenAI-compatible one by asking a chat model (``openai_compat``).
``augment`` then embeds every original and candidate in one call and keeps, in
the backend's order, the first ``n`` candidates that pass the quality filter
(``quality``): not empty, not a duplicate of the original or of a kept one
after normalising case, whitespace and punctuation, still naming the
occupation, keeping every diversity attribute term of the original, and with a
cosine similarity to the original of at least ``min_cosine``.

Thresholds. ``min_cosine`` defaults to 0.75 with all-MiniLM-L6-v2. The short
prompts are the hard case: against "Generate an image of a nurse", "A photo of
a nurse" scores about 0.82 and is kept, "Draw a nurse" about 0.72 and
"Show me a nurse" about 0.6 are refused; the long catalogue prompts keep
0.82 or more under every offline rewrite, while a changed occupation or a lost
clause falls lower. With another encoder the scale of cosines moves, so the
threshold is an argument and ``stats`` reports the lowest and the mean cosine
kept.

A paraphrase inherits its origin's label and group; this package only
produces the texts with their provenance (backend, model, template, seed).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from training.ml.backends import make
from training.ml.paraphrase.base import (
    AugmentResult,
    Backend,
    BudgetExceeded,
    Candidate,
    Original,
    Paraphrase,
    ParaphraseError,
    Rejection,
)
from training.ml.paraphrase.offline import OfflineBackend
from training.ml.paraphrase.openai_compat import OpenAIBackend
from training.ml.paraphrase.quality import REASONS, cosines, filter_candidates

__all__ = [
    "AugmentResult",
    "Backend",
    "BudgetExceeded",
    "Candidate",
    "OfflineBackend",
    "OpenAIBackend",
    "Original",
    "Paraphrase",
    "ParaphraseError",
    "Rejection",
    "augment",
    "make_backend",
]

BACKENDS: dict[str, type] = {"offline": OfflineBackend, "openai": OpenAIBackend}
DEFAULT_MIN_COSINE = 0.75


def make_backend(name: str, **options) -> Backend:
    """The backend called ``name`` (``offline`` or ``openai``), built with ``options``."""
    return make("paraphrase backend", BACKENDS, name, **options)


def augment(
    originals: Sequence[Original],
    backend: Backend,
    n: int = 8,
    *,
    embed: Callable[[list[str]], np.ndarray],
    min_cosine: float = DEFAULT_MIN_COSINE,
) -> AugmentResult:
    """Up to ``n`` filtered paraphrases per original, the rejections, and the figures.

    ``stats``: ``requested`` (originals x n), ``candidates``, ``kept``,
    ``rejected``, ``by_reason``, ``short`` (originals with fewer than n kept),
    ``threshold`` (``min_cosine``), ``min_cosine`` and ``mean_cosine`` of the
    kept ones (None if none), and the backend's ``requests``, ``prompt_tokens``,
    ``completion_tokens`` and ``cost_usd`` spent by this call.
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, not {n}")
    if not -1.0 <= min_cosine <= 1.0:
        raise ValueError(f"min_cosine must be in [-1, 1], not {min_cosine}")
    originals = list(originals)
    before = dict(backend.usage)
    proposed = backend.paraphrase(originals, n) if originals else []
    if len(proposed) != len(originals):
        raise ParaphraseError(
            f"backend {backend.name} answered {len(proposed)} lists for {len(originals)} originals"
        )
    texts = [o.text for o in originals] + [c.text for cands in proposed for c in cands]
    vectors = np.asarray(embed(texts)) if texts else np.zeros((0, 1))
    if vectors.shape[0] != len(texts):
        raise ValueError(f"embed returned {vectors.shape[0]} vectors for {len(texts)} texts")

    result = AugmentResult()
    at = len(originals)
    short = 0
    for i, (original, cands) in enumerate(zip(originals, proposed, strict=True)):
        sims = cosines(vectors[i], vectors[at : at + len(cands)])
        at += len(cands)
        verdict = filter_candidates(original, cands, sims, min_cosine, n)
        short += len(verdict.kept) < n
        result.rejected.extend(verdict.rejected)
        result.kept.extend(
            Paraphrase(
                origin_key=original.key,
                text=c.text,
                backend=backend.name,
                model=backend.model,
                template=c.template,
                seed=original.seed,
                cosine=sim,
            )
            for c, sim in verdict.kept
        )
    kept_cos = [p.cosine for p in result.kept]
    by_reason = {r: 0 for r in REASONS}
    for rejection in result.rejected:
        by_reason[rejection.reason] += 1
    result.stats = {
        "requested": n * len(originals),
        "candidates": len(texts) - len(originals),
        "kept": len(result.kept),
        "rejected": len(result.rejected),
        "by_reason": by_reason,
        "short": short,
        "threshold": float(min_cosine),
        "min_cosine": min(kept_cos) if kept_cos else None,
        "mean_cosine": float(np.mean(kept_cos)) if kept_cos else None,
        **{k: backend.usage.get(k, 0) - before.get(k, 0) for k in backend.usage},
    }
    if "cost_usd" in result.stats:
        result.stats["cost_usd"] = round(result.stats["cost_usd"], 6)
    return result
