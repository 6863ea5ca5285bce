"""What a release holds of its annotators' answers about themselves: only what each one's
consent allowed, and only in combinations that k or more released annotators share.

An annotator's **released answers** (``released_answer``): a column their consent version
lists, with a listed choice; an answer in their own words only where that version allows
free text (else a field with choices says ``other``, a free-text field nothing); no
answer, "prefer not to say" and everything else is null.

Then k-anonymity over the combinations (``coarsen``): every annotator's tuple of released
answers over the released columns must be shared by k or more released annotators; a
tuple of nulls says nothing and is exempt. Columns are dropped one at a time, each time the
one whose loss keeps the most answers, and once no column is worth dropping, the annotators
still in a combination under k have all their answers dropped (their row's demographics).
Of every set of columns met on that path, the release keeps the one that keeps the most
answers (the most columns on a tie). The card says which columns went and how many rows'
answers were dropped.

Pure Python (no Django): ``training.releases.services`` reads the answers and consents.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

from annotation.stats.records import group_of

OTHER = "other"
"""A choice field's answer in the annotator's own words, where own words are not released."""


@dataclass(frozen=True)
class Question:
    """A demographic field as the release reads it: its key and choices (none: free text)."""

    key: str
    choices: tuple[str, ...] = ()


def released_answer(
    answers: Mapping, question: Question, allowed: bool, free_text: bool
) -> str | None:
    """The answer a release may hold for one annotator (module docstring), or None."""
    if not allowed:
        return None
    value = group_of(answers, question.key)
    if value is None or (question.choices and value in question.choices) or free_text:
        return value
    return OTHER if question.choices else None


@dataclass(frozen=True)
class Coarsened:
    """The released columns (in their given order), the answered columns dropped, each
    annotator's released answers over the kept columns (None where nothing is released),
    and how many annotators had all their answers dropped."""

    columns: tuple[str, ...]
    dropped: tuple[str, ...]
    rows: dict[Hashable, dict[str, str | None]]
    suppressed: int


def _small(rows: Mapping[Hashable, Mapping], kept: Sequence[str], k: int) -> tuple[int, set]:
    """``(answers kept, annotators in a combination under k)`` over the columns ``kept``."""
    combos = {a: tuple(row.get(c) for c in kept) for a, row in rows.items()}
    counts = Counter(combos.values())
    small = {
        a for a, combo in combos.items() if counts[combo] < k and any(v is not None for v in combo)
    }
    kept_answers = sum(
        v is not None for a, combo in combos.items() if a not in small for v in combo
    )
    return kept_answers, small


def coarsen(
    rows: Mapping[Hashable, Mapping[str, str | None]], columns: Sequence[str], k: int
) -> Coarsened:
    """The module docstring's rule for ``rows`` (annotator -> {column: answer or None})
    over ``columns``; ``ValueError`` for ``k < 1``."""
    if k < 1:
        raise ValueError(f"k must be at least 1, not {k}")
    current = list(columns)
    best, best_score = list(current), _small(rows, current, k)[0]
    while current:
        # the column whose loss keeps the most answers; on a tie, the last one goes
        score, at = max((_small(rows, current[:i] + current[i + 1 :], k)[0], i) for i in
                        range(len(current)))  # fmt: skip
        del current[at]
        if score > best_score:
            best, best_score = list(current), score
    _, small = _small(rows, best, k)
    out = {a: {c: None if a in small else row.get(c) for c in best} for a, row in rows.items()}
    kept = tuple(c for c in best if any(row[c] is not None for row in out.values()))
    out = {a: {c: row[c] for c in kept} for a, row in out.items()}
    answered = {c for row in rows.values() for c in columns if row.get(c) is not None}
    dropped = tuple(c for c in columns if c not in kept and c in answered)
    return Coarsened(kept, dropped, out, len(small))


def group_counts(coarsened: Coarsened) -> dict[str, Counter]:
    """Per released column, how many released annotators gave each released answer."""
    return {
        c: Counter(row[c] for row in coarsened.rows.values() if row[c] is not None)
        for c in coarsened.columns
    }
