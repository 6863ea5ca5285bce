"""The DJ-PO prompt optimiser: rewrite a stereotypical prompt until the reward model passes it.

Method (the model card's "Intended Use"). The original prompt is scored; if
its score is at or above the threshold it is returned unchanged. Otherwise
each round asks a rewriter (``offline``: rules, deterministic by seed;
``openai``: a chat model behind an OpenAI-compatible API) for ``per_round``
rewrites of the best prompt so far that add diversity along the seven aspects
of the card (``ASPECTS``). Rewrites seen before are dropped; those that no
longer name the occupation (whole word, case-insensitive, plural allowed: the
paraphrase filter's check) are counted and dropped; the rest are scored with
the same ``score_fn``. The optimiser stops once ``n`` candidates pass or after
``rounds`` rounds, and returns the best ``n`` passing ones, best first.

Scores follow the model: higher is more diverse, and a prompt is flagged when
``score < threshold``. The gain of a candidate is ``score - score(original)``.
Given the same seed, rewriter and ``score_fn``, the result is the same.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from training.ml.backends import make
from training.ml.lexicon import names_occupation, normalise
from training.ml.optimise.base import (
    ASPECTS,
    OptimiseResult,
    Rewrite,
    RewriteBudgetExceeded,
    RewriteError,
    Rewriter,
    Scored,
)
from training.ml.optimise.llm import DEFAULT_TEMPLATE, LLMRewriter
from training.ml.optimise.offline import OfflineRewriter

__all__ = [
    "ASPECTS",
    "DEFAULT_TEMPLATE",
    "LLMRewriter",
    "OfflineRewriter",
    "OptimiseResult",
    "Rewrite",
    "RewriteBudgetExceeded",
    "RewriteError",
    "Rewriter",
    "Scored",
    "make_rewriter",
    "optimise",
]

REWRITERS: dict[str, type] = {"offline": OfflineRewriter, "openai": LLMRewriter}


def make_rewriter(name: str, **options) -> Rewriter:
    """The rewriter called ``name`` (``offline`` or ``openai``), built with ``options``."""
    return make("rewriter", REWRITERS, name, **options)


def _scorer(score_fn: Callable[[list[str]], np.ndarray]) -> Callable[[list[str]], np.ndarray]:
    def score(texts: list[str]) -> np.ndarray:
        scores = np.asarray(score_fn(list(texts)), dtype=np.float64).reshape(-1)
        if scores.shape[0] != len(texts):
            raise ValueError(f"score_fn returned {scores.shape[0]} scores for {len(texts)} texts")
        if not np.all(np.isfinite(scores)):
            raise ValueError("score_fn returned a score that is not a finite number")
        return scores

    return score


def optimise(
    prompt: str,
    occupation: str,
    score_fn: Callable[[list[str]], np.ndarray],
    threshold: float,
    rewriter: Rewriter,
    n: int = 3,
    rounds: int = 3,
    per_round: int = 8,
    seed: int = 0,
) -> OptimiseResult:
    """Up to ``n`` rewrites of ``prompt`` that keep ``occupation`` and score >= ``threshold``.

    ``score_fn`` maps a list of texts to their scores (one batch per round).
    Round ``r`` asks the rewriter with seed ``seed * 1000 + r``. The result
    holds the scored ``original``; ``candidates``, the passing rewrites best
    first (the original alone when it already passes); ``best``, the highest
    scoring rewrite that kept the occupation, passing or not (None if none);
    ``rounds`` run; ``tried``, the distinct new rewrites proposed; and
    ``lost_occupation``, those of them refused for not naming the occupation.
    """
    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError("the prompt must be a non-empty string")
    if not isinstance(occupation, str) or not occupation.strip():
        raise ValueError("the occupation must be a non-empty string")
    if not names_occupation(prompt, occupation):
        raise ValueError(f"the prompt does not name the occupation {occupation!r}: {prompt!r}")
    if n < 1 or rounds < 1 or per_round < 1:
        raise ValueError(
            f"n, rounds and per_round must be at least 1, not {n}, {rounds}, {per_round}"
        )
    if not np.isfinite(threshold):
        raise ValueError(f"the threshold must be a finite number, not {threshold}")
    score = _scorer(score_fn)
    base = float(score([prompt])[0])
    original = Scored(prompt, base, 0.0, (), base < threshold, 0)
    if not original.flagged:
        return OptimiseResult(original, (original,), None, float(threshold), 0, 0, 0)

    seen = {normalise(prompt)}
    parent, kept = original, []
    tried = lost = done = 0
    for r in range(1, rounds + 1):
        done = r
        fresh: list[Rewrite] = []
        for rw in rewriter.rewrite(parent.text, occupation, per_round, seed * 1000 + r):
            key = normalise(rw.text)
            if key and key not in seen:
                seen.add(key)
                fresh.append(rw)
        tried += len(fresh)
        named = [rw for rw in fresh if names_occupation(rw.text, occupation)]
        lost += len(fresh) - len(named)
        if named:
            scores = score([rw.text for rw in named])
            kept.extend(
                Scored(rw.text, float(s), float(s) - base, rw.aspects, bool(s < threshold), r)
                for rw, s in zip(named, scores, strict=True)
            )
            best = max(kept, key=lambda c: c.score)
            if best.score > parent.score:
                parent = best
        if sum(not c.flagged for c in kept) >= n:
            break
    ranked = sorted(kept, key=lambda c: -c.score)  # stable: ties keep the order of proposal
    passing = tuple(c for c in ranked if not c.flagged)[:n]
    best = ranked[0] if ranked else None
    return OptimiseResult(original, passing, best, float(threshold), done, tried, lost)
