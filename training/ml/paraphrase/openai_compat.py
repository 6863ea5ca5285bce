"""The OpenAI-compatible paraphrase backend: a chat model asked for paraphrases in JSON.

One request asks for the paraphrases of ``batch_size`` originals at once and
expects a JSON answer (``parse_answer`` accepts the usual shapes, code fences
and chatter around the JSON). Sending, retries, the rate limit and the cost
budget are the shared client's (``training.ml.chat``); its errors reach the
caller as ``ParaphraseError`` and ``BudgetExceeded``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

from training.ml.backends import chat_errors_as
from training.ml.chat import ChatClient, MalformedAnswer, loads_lenient
from training.ml.paraphrase.base import BudgetExceeded, Candidate, Original, ParaphraseError

__all__ = ["OpenAIBackend", "parse_answer"]

PROMPT_VERSION = "chat-v1"
SYSTEM_PROMPT = (
    "You paraphrase prompts for a text-to-image model. For every prompt you are given, write "
    "{k} different paraphrases. Each paraphrase must keep the meaning, name the occupation with "
    "the same word, and keep every detail about the person word for word: religion or belief, "
    "race or ethnic origin, gender identity or expression, nationality, ability or disability, "
    "age and body type. Vary the wording of the request and the order of the clauses. Answer "
    'with JSON only, in the form {{"paraphrases": {{"<id>": ["...", "..."]}}}}.'
)


def _texts(value) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return []
    out = []
    for item in value:
        if isinstance(item, dict):
            item = item.get("text") or item.get("paraphrase")
        if isinstance(item, str) and item.strip():
            out.append(item.strip())
    return out


def parse_answer(content: str, count: int) -> list[list[str]]:
    """The paraphrases of prompts ``1..count`` in a chat answer, in order.

    Accepts ``{"paraphrases": {"1": [...]}}``, ``{"1": [...]}``, a list of
    ``{"id", "paraphrases"|"texts"}`` objects, or a list of lists; raises
    ``MalformedAnswer`` when a prompt gets no paraphrase.
    """
    data = loads_lenient(content)
    if isinstance(data, dict) and "paraphrases" in data:
        data = data["paraphrases"]
    by_id: dict[str, list[str]] = {}
    if isinstance(data, dict):
        by_id = {str(k).strip(): _texts(v) for k, v in data.items()}
    elif isinstance(data, list) and data and all(isinstance(x, dict) for x in data):
        for x in data:
            texts = x.get("paraphrases", x.get("texts"))
            by_id[str(x.get("id", "")).strip()] = _texts(texts)
    elif isinstance(data, list) and all(isinstance(x, list) for x in data):
        by_id = {str(i): _texts(x) for i, x in enumerate(data, start=1)}
    elif isinstance(data, list) and count == 1:
        by_id = {"1": _texts(data)}
    else:
        raise MalformedAnswer(f"unexpected JSON shape: {content[:120]!r}")
    out = []
    for i in range(1, count + 1):
        texts = by_id.get(str(i), [])
        if not texts:
            raise MalformedAnswer(f"no paraphrases for prompt {i} of {count}")
        out.append(texts)
    return out


class OpenAIBackend:
    """Paraphrases from a chat model behind ``{base_url}/chat/completions``.

    ``batch_size`` originals go in one request, each asked for ``n * (1 +
    oversample)`` paraphrases; every other option is the client's
    (``training.ml.chat.ChatClient``: timeouts, retries, rate limit, prices,
    budget).
    """

    name = "openai"

    def __init__(self, *, batch_size: int = 8, oversample: float = 0.5, **client_options) -> None:
        if batch_size < 1 or oversample < 0:
            raise ValueError("batch_size must be >= 1 and oversample >= 0")
        self.client = ChatClient(**client_options)
        self.model = self.client.model
        self.batch_size, self.oversample = batch_size, oversample
        self.usage = self.client.usage

    def __repr__(self) -> str:
        return f"OpenAIBackend(url={self.client.url!r}, model={self.model!r})"

    def close(self) -> None:
        """Close the HTTP connections."""
        self.client.close()

    def paraphrase(self, batch: Sequence[Original], n: int) -> list[list[Candidate]]:
        """``n * (1 + oversample)`` paraphrases for each original, ``batch_size`` per request."""
        k = n + math.ceil(n * self.oversample)
        out: list[list[Candidate]] = []
        for start in range(0, len(batch), self.batch_size):
            chunk = batch[start : start + self.batch_size]
            for texts in self._ask(chunk, k):
                out.append([Candidate(t, f"chat:{PROMPT_VERSION}") for t in texts[:k]])
        return out

    def _messages(self, chunk: Sequence[Original], k: int) -> list[dict]:
        prompts = [
            {"id": str(i), "occupation": o.occupation, "text": o.text}
            for i, o in enumerate(chunk, start=1)
        ]
        return [
            {"role": "system", "content": SYSTEM_PROMPT.format(k=k)},
            {"role": "user", "content": json.dumps({"prompts": prompts}, ensure_ascii=False)},
        ]

    def _ask(self, chunk: Sequence[Original], k: int) -> list[list[str]]:
        wanted = sum(k * (math.ceil(len(o.text) / 2) + 10) for o in chunk) + 64
        with chat_errors_as(ParaphraseError, BudgetExceeded):
            return self.client.complete(
                self._messages(chunk, k),
                lambda content: parse_answer(content, len(chunk)),
                wanted_tokens=wanted,
                seed=chunk[0].seed,
            )
