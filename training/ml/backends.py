"""What the paraphrase back-ends and the optimiser's rewriters share, offline or a chat model.

- ``Backend``: the attributes every one has (``name``, ``model``, ``usage``);
- ``make``: build the one a name picks from a kind's table (``offline`` or ``openai``);
- ``chat_errors_as``: the chat client's failures (``training.ml.chat``) raised as the
  kind's own error and budget error, with the client's message;
- ``seeded_rng``: the offline ones' draws, the same for the same seed in every process.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from training.ml.chat import ChatBudgetExceeded, ChatError
from training.ml.errors import MLError


class Backend(Protocol):
    """Anything that proposes texts for a prompt, offline or from a chat model.

    ``usage`` holds running totals (``requests``, ``prompt_tokens``,
    ``completion_tokens``, ``cost_usd``) so that a caller can report the cost.
    """

    name: str
    model: str
    usage: dict


def make(kind: str, table: dict[str, type], name: str, **options):
    """The ``kind`` called ``name`` in ``table``, built with ``options``; ``ValueError`` if
    there is none."""
    try:
        cls = table[name]
    except KeyError:
        raise ValueError(f"unknown {kind} {name!r}: use {' or '.join(table)}") from None
    return cls(**options)


@contextmanager
def chat_errors_as(error: type[MLError], budget: type[MLError]) -> Iterator[None]:
    """Inside: ``ChatBudgetExceeded`` becomes ``budget``, any other ``ChatError`` ``error``."""
    try:
        yield
    except ChatBudgetExceeded as exc:
        raise budget(str(exc)) from exc
    except ChatError as exc:
        raise error(str(exc)) from exc


def seeded_rng(*parts) -> random.Random:
    """A ``random.Random`` seeded by ``parts`` the same way in every process (SHA-256 of
    their ``\0``-joined text; Python's ``hash`` of a string changes per process)."""
    digest = hashlib.sha256("\0".join(str(p) for p in parts).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))
