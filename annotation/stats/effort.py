"""How long one answer takes in each question format, and so how many answers a
participant is asked for (issue 40: a pair takes a fraction of a six-card ranking, and the
time a study advertises must stay true whatever it asks).

**The seconds per answer** are planning figures, not measurements: 7.5 s a card for a
strict ranking (45 s for six), a ninth more with ties (50 s for six), 2.5 s a card read
plus 5 s a card ordered for top-k (25 s for the top 2 of 6), 3.75 s a card for best-worst
(15 s for four) and 6 s a pair. No published figure gives seconds per judgement for a task
like ours (``docs/benchmarks.md``, "Question formats per annotator-minute", which takes
these as the benchmark's defaults); a study's ``quality`` report measures its own (time
on task, answers per annotator-minute), and those are what a lab should advertise once
it has them.

**The quota and the minimum.** ``STEREORANK_ANNOTATOR_QUOTA`` (20) and a study's blank
``minimum_rankings`` (one) count strict rankings of ``STEREORANK_TASK_SIZE`` cards (six),
the task the platform began with; a study in another format asks, by default, for as many
of its own answers as take the same time (rounded up): 60 best-worst answers of four, or
150 pairs, for twenty rankings of six. A strict-rank study counts its own rankings,
whatever its task size, as it always has. A quota or minimum a study sets
(``tasks_per_participant``, ``minimum_rankings``) counts its own answers as written.

Pure: no Django import.
"""

from __future__ import annotations

import math

RANK, RANK_TIES, TOP_K, BEST_WORST, PAIRWISE = (
    "rank",
    "rank_ties",
    "top_k",
    "best_worst",
    "pairwise",
)


def seconds_per_answer(question: str, size: int, k: int | None = None) -> float:
    """The planning seconds of one answer of ``size`` cards (module docstring)."""
    if question == RANK:
        return 7.5 * size
    if question == RANK_TIES:
        return 7.5 * size * 10 / 9
    if question == TOP_K:
        return 2.5 * size + 5.0 * (k or 1)
    if question == BEST_WORST:
        return 3.75 * size
    if question == PAIRWISE:
        return 6.0
    raise ValueError(f"not a question format: {question!r}")


def answers_for(rankings: int, question: str, size: int, k: int | None, reference_size: int) -> int:
    """The answers in ``question`` that take as long as ``rankings`` strict rankings of
    ``reference_size`` cards (at least one); a strict-rank study's are its rankings."""
    if question == RANK:
        return max(1, rankings)
    ratio = seconds_per_answer(RANK, reference_size) / seconds_per_answer(question, size, k)
    return max(1, math.ceil(rankings * ratio - 1e-9))


def minutes(answers: int, question: str, size: int, k: int | None = None) -> float:
    """The planning minutes of ``answers`` answers."""
    return answers * seconds_per_answer(question, size, k) / 60
