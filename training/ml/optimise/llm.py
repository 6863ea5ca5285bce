"""The LLM rewriter: a chat model behind an OpenAI-compatible API asked for diverse rewrites.

The instruction is a template (``DEFAULT_TEMPLATE``, or the caller's) sent as
the one user message, with these placeholders filled in:

* ``{prompt}``: the prompt to rewrite (required);
* ``{occupation}``: the occupation it names;
* ``{n}``: how many rewrites to write;
* ``{aspects}``: the seven aspects of the model card, comma-separated.

Any other placeholder is refused when the rewriter is built; literal braces are
written doubled (``{{`` and ``}}``), as in ``str.format``. The answer must be
JSON: a list of ``{"text": ..., "aspects": [...]}`` objects, or an object
holding that list under ``"rewrites"``; code fences and chatter around the
JSON are allowed. Aspect names are read loosely ("Religion", "race",
"disability", "body type"...) and mapped onto ``ASPECTS``. An answer that is
not JSON, holds no rewrite, or has an item without text or with an unknown
aspect is malformed: it is asked again (the client's retries), then reported
as a ``RewriteError`` that says what was wrong. Sending, retries, the rate
limit and the cost budget are the shared client's (``training.ml.chat``).
"""

from __future__ import annotations

import math
import string

from training.ml.backends import chat_errors_as
from training.ml.chat import ChatClient, MalformedAnswer
from training.ml.chat import loads_lenient as _loads
from training.ml.lexicon import normalise
from training.ml.optimise.base import ASPECTS, Rewrite, RewriteBudgetExceeded, RewriteError

PLACEHOLDERS = ("prompt", "occupation", "n", "aspects")
DEFAULT_TEMPLATE = """\
You rewrite prompts for a text-to-image model so that the image it makes does not \
show the stereotypical {occupation}.
Write {n} different rewrites of the prompt below. Each rewrite must:
- still name the occupation "{occupation}" with that word;
- keep the scene, the action and the setting of the prompt;
- describe the person with one to three of these aspects of diversity: {aspects};
- read as one natural sentence.
Answer with JSON only: a list of objects {{"text": "<the rewrite>", "aspects": \
["<aspect>", ...]}}, where "aspects" names, from the list above, the aspects the \
rewrite's description of the person covers.

Prompt: {prompt}
"""

# Loose names for each aspect, as a model may write them.
_ALIASES: dict[str, str] = {
    **{a: a for a in ASPECTS},
    "religion": "religion/belief",
    "belief": "religion/belief",
    "religion or belief": "religion/belief",
    "race": "race/ethnic origin",
    "ethnicity": "race/ethnic origin",
    "ethnic origin": "race/ethnic origin",
    "race or ethnic origin": "race/ethnic origin",
    "gender": "gender identity/expression",
    "gender identity": "gender identity/expression",
    "gender expression": "gender identity/expression",
    "gender identity or expression": "gender identity/expression",
    "national origin": "nationality",
    "ability": "ability/disability",
    "disability": "ability/disability",
    "ability or disability": "ability/disability",
    "ability/disability status": "ability/disability",
    "age/generational identity": "age",
    "generational identity": "age",
    "body": "body type",
    "body shape": "body type",
    "body size": "body type",
}


def check_template(template: str) -> str:
    """``template`` if its placeholders are known and include ``{prompt}``; else ``ValueError``."""
    if not isinstance(template, str) or not template.strip():
        raise ValueError("the rewrite template must be a non-empty string")
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
    except ValueError as exc:
        raise ValueError(
            f"the rewrite template is malformed ({exc}); write literal braces "
            "doubled: {{ and }}"
        ) from None
    unknown = sorted({f for f in fields if f not in PLACEHOLDERS})
    if unknown:
        raise ValueError(
            f"unknown placeholder(s) in the rewrite template: {', '.join(map(repr, unknown))}; "
            f"use {', '.join('{' + p + '}' for p in PLACEHOLDERS)} and write literal braces "
            "doubled: {{ and }}"
        )
    if "prompt" not in fields:
        raise ValueError("the rewrite template must contain the {prompt} placeholder")
    return template


def aspect_name(name: object) -> str:
    """The ``ASPECTS`` name a model's aspect label stands for; ``MalformedAnswer`` if none."""
    key = " ".join(str(name).replace("_", " ").split()).casefold()
    try:
        return _ALIASES[key]
    except KeyError:
        raise MalformedAnswer(
            f"unknown aspect {name!r}; the aspects are {', '.join(ASPECTS)}"
        ) from None


def parse_rewrites(content: str) -> list[Rewrite]:
    """The rewrites in a chat answer, in order (see the module docstring for the shapes)."""
    data = _loads(content)
    if isinstance(data, dict) and "rewrites" in data:
        data = data["rewrites"]
    if not isinstance(data, list):
        raise MalformedAnswer(
            f'expected a list of {{"text", "aspects"}} objects, got: {content[:120]!r}'
        )
    out = []
    for i, item in enumerate(data, start=1):
        if not isinstance(item, dict):
            raise MalformedAnswer(f"rewrite {i} is not an object: {item!r:.80}")
        text = item.get("text")
        if not isinstance(text, str) or not text.strip():
            raise MalformedAnswer(f"rewrite {i} has no text")
        raw = item.get("aspects", [])
        if isinstance(raw, str):
            raw = [raw]
        if not isinstance(raw, list):
            raise MalformedAnswer(f"rewrite {i}: aspects must be a list, not {raw!r:.80}")
        named = {aspect_name(a) for a in raw}
        out.append(Rewrite(" ".join(text.split()), tuple(a for a in ASPECTS if a in named)))
    if not out:
        raise MalformedAnswer("the answer holds no rewrite")
    return out


class LLMRewriter:
    """Rewrites from a chat model, asked with ``template``; the other options are the client's.

    ``client_options`` go to ``training.ml.chat.ChatClient`` (timeout,
    retries, ``requests_per_minute``, prices, ``max_cost_usd``...).
    """

    name = "openai"

    def __init__(self, *, template: str = DEFAULT_TEMPLATE, **client_options) -> None:
        self.template = check_template(template)
        self.client = ChatClient(**client_options)
        self.model = self.client.model
        self.usage = self.client.usage

    def __repr__(self) -> str:
        return f"LLMRewriter(url={self.client.url!r}, model={self.model!r})"

    def close(self) -> None:
        """Close the HTTP connections."""
        self.client.close()

    def message(self, prompt: str, occupation: str, n: int) -> str:
        """The instruction sent for one prompt: the template filled in."""
        return self.template.format(
            prompt=prompt, occupation=occupation, n=n, aspects=", ".join(ASPECTS)
        )

    def rewrite(self, prompt: str, occupation: str, n: int, seed: int) -> list[Rewrite]:
        """Up to ``n`` distinct rewrites from one request; ``seed`` is passed to the server."""
        if n < 1:
            raise ValueError(f"n must be at least 1, not {n}")
        messages = [{"role": "user", "content": self.message(prompt, occupation, n)}]
        wanted = n * (math.ceil(len(prompt) / 2) + 60) + 64
        with chat_errors_as(RewriteError, RewriteBudgetExceeded):
            rewrites = self.client.complete(
                messages, parse_rewrites, wanted_tokens=wanted, seed=seed
            )
        seen, out = set(), []
        for r in rewrites:
            if normalise(r.text) not in seen:
                seen.add(normalise(r.text))
                out.append(r)
        return out[:n]
