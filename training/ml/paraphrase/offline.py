"""The offline backend: rule-based rewrites of image prompts, no network, deterministic.

A prompt is read as a lead-in ("Generate an image of") and a body ("a nurse
who is a middle-aged man, checking a chart"). Candidates combine

* a new lead-in from ``FRAMES`` (verb and noun synonyms: "Create a photo of",
  "A portrait of", "Show", ...), and
* the body as it is or with its clauses reordered (``_bodies``: "a nurse
  checking a chart, who is a middle-aged man", "a middle-aged man working as
  a nurse, checking a chart").

Words of the body are never replaced, so the occupation and every diversity
attribute survive by construction. The order of the candidates is a shuffle
seeded by ``(seed, text)``: the same original always gets the same candidates.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from training.ml.backends import seeded_rng
from training.ml.lexicon import normalise
from training.ml.paraphrase.base import Candidate, Original

RULES_VERSION = "rules-v1"

_VERBS = {
    "generate": "Generate",
    "create": "Create",
    "produce": "Produce",
    "make": "Make",
    "render": "Render",
}
_NOUNS = {
    "image-of": "an image of",
    "picture-of": "a picture of",
    "photo-of": "a photo of",
    "photograph-of": "a photograph of",
    "illustration-of": "an illustration of",
    "image-showing": "an image showing",
    "picture-showing": "a picture showing",
    "image-depicting": "an image depicting",
    "realistic-image-of": "a realistic image of",
    "portrait-of": "a portrait of",
}
_STANDALONE = {
    "a-photo-of": "A photo of",
    "a-picture-of": "A picture of",
    "an-image-of": "An image of",
    "an-image-showing": "An image showing",
    "a-portrait-of": "A portrait of",
    "portrait-of": "Portrait of",
    "please-generate-an-image-of": "Please generate an image of",
    "depict": "Depict",
    "draw": "Draw",
    "illustrate": "Illustrate",
}
# Lead-ins, by template name: every verb with every noun, and the standalone ones.
FRAMES: dict[str, str] = {
    **{f"{v}-{n}": f"{verb} {noun}" for v, verb in _VERBS.items() for n, noun in _NOUNS.items()},
    **_STANDALONE,
}

_LEAD_IN = re.compile(
    r"^\s*(?:please\s+)?"
    r"(?:(?:(?:generate|create|produce|make|render|draw|paint|design|give\s+me|show\s+me|show)\s+)?"
    r"(?:(?:an?|the|one)\s+)?(?:(?:realistic|photorealistic|detailed|high[- ]quality)\s+)?"
    r"(?:image|picture|photo|photograph|illustration|portrait|painting|drawing|rendering)\s+"
    r"(?:of|showing|depicting|featuring)\s+"
    r"|(?:draw|depict|show\s+me|show|illustrate|imagine|paint|picture)\s+)",
    re.IGNORECASE,
)
_ARTICLE = re.compile(r"^(?:an?|the)\s", re.IGNORECASE)
# A clause that describes an action: ", smiling at a patient".
_ACTION = re.compile(r",\s+(?=\w+ing\b)")


def split_lead_in(text: str) -> tuple[str, str]:
    """``(lead-in, body)``; the lead-in is empty when the prompt has none."""
    text = text.strip()
    m = _LEAD_IN.match(text)
    if m:
        return text[: m.end()].strip(), text[m.end() :]
    if _ARTICLE.match(text):
        text = text[0].lower() + text[1:]
    return "", text


def _split_action(desc: str) -> tuple[str, str]:
    parts = _ACTION.split(desc, maxsplit=1)
    return (parts[0], parts[1]) if len(parts) == 2 else (desc, "")


def _bodies(body: str) -> dict[str, str]:
    """The body as it is and with its clauses reordered, by template name."""
    out = {"as-is": body}
    who = re.match(r"^(?P<subj>.+?)\s+who\s+is\s+(?P<desc>.+)$", body, re.IGNORECASE)
    colon = re.match(r"^(?P<subj>[^:]+?):\s+(?P<desc>.+)$", body)
    m = who or colon
    if not m:
        return out
    subj = m["subj"]
    core, action = _split_action(m["desc"])
    tail = f", {action}" if action else ""
    if who:
        out["apposition"] = f"{subj}, {core}{tail}"
    elif _ARTICLE.match(core):
        out["who-is"] = f"{subj} who is {core}{tail}"
    if action:
        out["action-first"] = f"{subj} {action}, who is {core}"
    if _ARTICLE.match(subj) and _ARTICLE.match(core):
        out["person-first"] = f"{core} working as {subj}{tail}"
    return out


class OfflineBackend:
    """Rule-based paraphrases (see the module docstring); ``oversample`` extra per ``n``."""

    name = "offline"

    def __init__(self, oversample: float = 0.5) -> None:
        if oversample < 0:
            raise ValueError(f"oversample must be >= 0, not {oversample}")
        self.oversample = oversample
        self.model = RULES_VERSION
        self.usage = {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0}

    def candidates(self, original: Original) -> list[Candidate]:
        """Every distinct candidate for ``original``, in its seeded order."""
        rng = seeded_rng(original.seed, original.text)
        _, body = split_lead_in(original.text)
        bodies = list(_bodies(body).items())
        orders = []
        for _ in bodies:
            names = list(FRAMES)
            rng.shuffle(names)
            orders.append(names)
        seen = {normalise(original.text)}
        out = []
        for i in range(len(FRAMES)):
            for (order, text), frames in zip(bodies, orders, strict=True):
                frame = frames[i]
                candidate = f"{FRAMES[frame]} {text}"
                key = normalise(candidate)
                if key in seen:
                    continue
                seen.add(key)
                template = f"frame:{frame}" if order == "as-is" else f"frame:{frame}+{order}"
                out.append(Candidate(candidate, template))
        return out

    def paraphrase(self, batch: Sequence[Original], n: int) -> list[list[Candidate]]:
        """The first ``n * (1 + oversample)`` candidates of each original."""
        k = n + math.ceil(n * self.oversample)
        return [self.candidates(original)[:k] for original in batch]
