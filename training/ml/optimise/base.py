"""The records the prompt optimiser reads and writes, and the rewriter interface."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from training.ml.backends import Backend
from training.ml.errors import MLError
from training.ml.lexicon import ATTRIBUTES

# The seven aspects of diversity of the DJ-PO model card, named as the
# paraphrase filter's lexicon names them (one home for the names).
ASPECTS: tuple[str, ...] = tuple(ATTRIBUTES)


class RewriteError(MLError, RuntimeError):
    """A rewriter could not produce rewrites; the message says why."""


class RewriteBudgetExceeded(RewriteError):
    """The next request to the chat model could cost more than what is left of the budget."""


@dataclass(frozen=True)
class Rewrite:
    """A candidate rewrite of a prompt and the aspects (of ``ASPECTS``) it gives the person.

    ``phrase`` is the description of the person the rewriter inserted, when it
    knows it (the offline rewriter does; a chat model's rewrite has none).
    """

    text: str
    aspects: tuple[str, ...]
    phrase: str = ""


@dataclass(frozen=True)
class Scored:
    """A prompt or candidate with its score, its gain over the original and its flag.

    ``flagged`` is ``score < threshold`` (the model card's rule); ``round`` is
    0 for the original prompt.
    """

    text: str
    score: float
    gain: float
    aspects: tuple[str, ...]
    flagged: bool
    round: int


@dataclass(frozen=True)
class OptimiseResult:
    """What ``optimise`` found for one prompt (see ``optimise`` for the fields)."""

    original: Scored
    candidates: tuple[Scored, ...]
    best: Scored | None
    threshold: float
    rounds: int
    tried: int
    lost_occupation: int

    @property
    def reached(self) -> bool:
        """Whether at least one returned prompt scores at or above the threshold."""
        return any(not c.flagged for c in self.candidates)


class Rewriter(Backend, Protocol):
    """Anything that proposes rewrites of a prompt that add diversity to its person
    (``name``, ``model`` and ``usage``: ``training.ml.backends.Backend``)."""

    def rewrite(self, prompt: str, occupation: str, n: int, seed: int) -> list[Rewrite]:
        """Up to ``n`` distinct rewrites of ``prompt``; the same for the same ``seed`` offline.

        A chat model is sent the seed, which most servers honour only loosely.
        """
        ...
