"""The quality filter: which candidate paraphrases are kept, and why the others are not.

A candidate is kept only if, in this order of checks:

1. it is not empty (``empty``);
2. its normalised text (case folded, punctuation dropped, whitespace collapsed)
   differs from the original's and from every candidate already kept for that
   original (``duplicate``);
3. it still names the occupation, as a whole word or phrase, singular or plural,
   when the original does (``occupation``);
4. every diversity attribute term of ``ATTRIBUTES`` found in the original is
   found in the candidate (``attribute``; the detail names the lost terms);
5. the cosine similarity of its embedding to the original's is at least
   ``min_cosine`` (``cosine``).

The lexicon is deliberately literal: a term is kept only if the same word (or
one of the few spellings listed with it, such as ``sixties``/``60s``) is there.
A paraphrase that turns "woman" into "female" is refused; losing a real
paraphrase costs little, blurring an attribute would corrupt the label.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from training.ml.lexicon import attribute_terms, names_occupation, normalise
from training.ml.paraphrase.base import Candidate, Original, Rejection

REASONS = ("empty", "duplicate", "occupation", "attribute", "cosine")


def cosines(original: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Cosine similarity of each row of ``candidates [k, d]`` to ``original [d]``."""
    original = np.asarray(original, dtype=np.float64)
    candidates = np.asarray(candidates, dtype=np.float64).reshape(-1, original.shape[-1])
    norms = np.linalg.norm(candidates, axis=1) * np.linalg.norm(original)
    dots = candidates @ original
    return np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)


@dataclass(frozen=True)
class Verdict:
    """The filter's answer for one original: the kept candidates (with cosines) and rejections."""

    kept: list[tuple[Candidate, float]]
    rejected: list[Rejection]


def text_rejection(
    original: Original, text: str, seen: set[str], required: set[tuple[str, str]]
) -> tuple[str, str] | None:
    """The first text rule ``text`` breaks, as ``(reason, detail)``, or None.

    ``seen`` holds the normalised original and kept texts; ``required`` the
    original's attribute terms.
    """
    norm = normalise(text)
    if not norm:
        return "empty", ""
    if norm in seen:
        return "duplicate", ""
    if names_occupation(original.text, original.occupation) and not names_occupation(
        text, original.occupation
    ):
        return "occupation", original.occupation
    lost = required - attribute_terms(text)
    if lost:
        return "attribute", ", ".join(f"{aspect}: {term}" for aspect, term in sorted(lost))
    return None


def filter_candidates(
    original: Original,
    candidates: Sequence[Candidate],
    cosine: Sequence[float],
    min_cosine: float,
    n: int | None = None,
) -> Verdict:
    """Apply the rules in order; keep at most ``n`` (the first that pass), reject the rest.

    Candidates after the ``n``-th kept one are not examined. ``cosine[i]`` is
    candidate ``i``'s similarity to the original.
    """
    if len(cosine) != len(candidates):
        raise ValueError(f"{len(candidates)} candidates but {len(cosine)} cosines")
    seen = {normalise(original.text)}
    required = attribute_terms(original.text)
    kept: list[tuple[Candidate, float]] = []
    rejected: list[Rejection] = []
    for candidate, sim in zip(candidates, cosine, strict=True):
        if n is not None and len(kept) >= n:
            break
        sim = float(sim)
        broken = text_rejection(original, candidate.text, seen, required)
        if broken is None and sim < min_cosine:
            broken = ("cosine", f"{sim:.3f} < {min_cosine:.3f}")
        if broken is not None:
            reason, detail = broken
            rejected.append(Rejection(original.key, candidate.text, reason, sim, detail))
            continue
        seen.add(normalise(candidate.text))
        kept.append((candidate, sim))
    return Verdict(kept, rejected)
