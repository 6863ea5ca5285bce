"""The records a paraphrase backend reads and writes, and the backend interface."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from training.ml.backends import Backend as LLMBackend
from training.ml.errors import MLError


class ParaphraseError(MLError, RuntimeError):
    """A backend could not produce paraphrases; the message says why."""


class BudgetExceeded(ParaphraseError):
    """The next request could cost more than what is left of ``max_cost_usd``."""


@dataclass(frozen=True)
class Original:
    """An original prompt to paraphrase: its key, text, occupation and seed."""

    key: str
    text: str
    occupation: str
    seed: int = 0


@dataclass(frozen=True)
class Candidate:
    """A proposed paraphrase and the rule (or prompt template) that made it."""

    text: str
    template: str


@dataclass(frozen=True)
class Paraphrase:
    """A kept paraphrase, with its provenance and its cosine to the original."""

    origin_key: str
    text: str
    backend: str
    model: str
    template: str
    seed: int
    cosine: float


@dataclass(frozen=True)
class Rejection:
    """A candidate the quality filter refused, with the reason (``REASONS``) and detail."""

    origin_key: str
    text: str
    reason: str
    cosine: float | None
    detail: str = ""


@dataclass
class AugmentResult:
    """What ``augment`` kept and rejected, and its figures (see ``augment``)."""

    kept: list[Paraphrase] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)
    stats: dict = field(default_factory=dict)


class Backend(LLMBackend, Protocol):
    """Anything that proposes paraphrases: one list of candidates per original
    (``name``, ``model`` and ``usage``: ``training.ml.backends.Backend``)."""

    def paraphrase(self, batch: Sequence[Original], n: int) -> list[list[Candidate]]:
        """Candidates for each original, a few more than ``n`` so the filter can refuse some."""
        ...
