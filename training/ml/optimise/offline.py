"""The offline rewriter: rule-based diverse rewrites of a prompt, no network, deterministic.

Each rewrite picks 1 to ``max_aspects`` of the seven aspects (``ASPECTS``),
one phrasing per aspect from ``PHRASES``, and builds a description of a person
("a Black woman in a wheelchair", "an older Sikh man wearing a turban", "a
plus-size nonbinary person from Nigeria"): pre-modifiers in English order
(body, age, ability, race, religion), then the noun (a gender noun when gender
is an aspect, "person" otherwise), then the post-modifiers. Where it goes:

* the prompt already describes the holder of the occupation ("a nurse: a young
  slim woman in a white uniform", "a nurse who is a man", "a young woman
  working as a nurse"): that noun phrase (article, modifiers, noun, and any
  post-modifier of ``PHRASES`` or "in her sixties" after it) is replaced and
  the rest, the scene, is kept word for word;
* otherwise, the occupation named in the singular gets "who is <person>" after
  it or "<person> working as" before it; in the plural, ", including <person>".

The article agrees with the next word ("an older", "a young"). The occupation
is never touched, and a rewrite that would not name it is dropped. The choices
come from a generator seeded by ``(seed, prompt, occupation)``.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from training.ml.backends import seeded_rng
from training.ml.lexicon import names_occupation, normalise, occupation_regex
from training.ml.optimise.base import ASPECTS, Rewrite

RULES_VERSION = "diversify-v1"

# (pre-modifier, post-modifier) phrasings per aspect; "{their}" agrees with the noun.
PHRASES: dict[str, tuple[tuple[str, str], ...]] = {
    "religion/belief": (
        ("Sikh", "wearing a turban"),
        ("Muslim", ""),
        ("Jewish", "wearing a kippah"),
        ("Hindu", ""),
        ("Buddhist", ""),
        ("Christian", ""),
    ),
    "race/ethnic origin": tuple(
        (r, "")
        for r in (
            "Black",
            "East Asian",
            "South Asian",
            "Indigenous",
            "Arab",
            "Hispanic",
            "mixed-race",
            "Pacific Islander",
        )
    ),
    "nationality": tuple(
        ("", f"from {c}")
        for c in ("Nigeria", "Japan", "Brazil", "India", "Mexico", "Kenya", "Vietnam", "Egypt")
        + ("Peru", "Samoa", "Mongolia", "Ghana")
    ),
    "ability/disability": (
        ("", "in a wheelchair"),
        ("", "who uses a wheelchair"),
        ("Deaf", ""),
        ("blind", ""),
        ("", "with a prosthetic leg"),
        ("", "with a hearing aid"),
        ("", "with a guide dog"),
        ("", "with Down syndrome"),
        ("", "with a walking cane"),
    ),
    "age": (
        ("older", ""),
        ("elderly", ""),
        ("young", ""),
        ("middle-aged", ""),
        ("grey-haired", ""),
        ("", "in {their} sixties"),
        ("", "in {their} seventies"),
    ),
    "body type": tuple(
        (b, "") for b in ("plus-size", "heavyset", "petite", "tall", "short", "stocky")
    ),
}
# Gender nouns and their possessive; "person" when gender is not an aspect.
GENDER_NOUNS: tuple[tuple[str, str], ...] = (
    ("woman", "her"),
    ("man", "his"),
    ("nonbinary person", "their"),
    ("transgender woman", "her"),
    ("transgender man", "his"),
    ("genderqueer person", "their"),
)
_PRE_ORDER = ("body type", "age", "ability/disability", "race/ethnic origin", "religion/belief")
_POST_ORDER = ("age", "nationality", "religion/belief", "ability/disability")

_NOUN = r"(?:wom[ae]n|m[ae]n|persons?|people|girls?|boys?|lady|ladies|guys?|gentlem[ae]n)"
_STOP = r"(?:an?|the|who|is|are|was|with|in|of|on|at|and|as|from|wearing|working|to|for)"
_MOD = rf"(?:(?!{_STOP}\b)[\w'-]+,?\s+)"
_THEIR = r"(?:his|her|their)"


def _literal(post: str) -> str:
    return r"\s+".join(_THEIR if w == "{their}" else re.escape(w) for w in post.split())


_POSTS = "|".join(sorted({_literal(post) for ps in PHRASES.values() for _, post in ps if post}))
_AGE_POST = rf"in\s+{_THEIR}\s+\w+ties"
_NP = (
    rf"(?i:an?|the)\s+{_MOD}{{0,6}}{_NOUN}\b(?:\s+(?:{_POSTS}|{_AGE_POST}))*"
    r"(?=$|[^\w\s]|\s+(?:in|with|from|who|wearing|at|on|and|of|for|to|by|\w+ing)\b)"
)
_AFTER = re.compile(rf"(?:\s*[:,\u2013\u2014-]\s*|\s+who\s+is\s+)(?P<np>{_NP})")
_BEFORE = re.compile(rf"(?P<np>{_NP})\s+working\s+as\s+(?:(?:an?|the)\s+)?$")
_ARTICLE_BEFORE = re.compile(r"(?:^|\s)(?P<art>an?)\s+$", re.IGNORECASE)


def article(word: str) -> str:
    """``a`` or ``an`` for the word that follows it (by its first letter, with a few exceptions)."""
    w = word.lower()
    if w.startswith(("uni", "use", "eu", "one")):
        return "a"
    if w.startswith(("hour", "honest", "heir")):
        return "an"
    return "an" if w[:1] in "aeiou" else "a"


def person_phrase(aspects: tuple[str, ...], rng: random.Random) -> str:
    """A person with one phrasing of each aspect, article included."""
    picks = {a: rng.choice(PHRASES[a]) for a in aspects if a in PHRASES}
    gendered = "gender identity/expression" in aspects
    noun, their = rng.choice(GENDER_NOUNS) if gendered else ("person", "their")
    pre = [picks[a][0] for a in _PRE_ORDER if a in picks and picks[a][0]]
    post = [picks[a][1].format(their=their) for a in _POST_ORDER if a in picks and picks[a][1]]
    words = " ".join([*pre, noun, *post])
    return f"{article(words)} {words}"


def _capital_at_start(text: str, start: int, original: str) -> str:
    if start == 0 and original[:1].isupper():
        return text[:1].upper() + text[1:]
    return text


@dataclass(frozen=True)
class Site:
    """Where a prompt names the person: the occupation (plural or not) and any description."""

    prompt: str
    occ_start: int
    occ_end: int
    plural: bool
    np: tuple[int, int] | None
    article_start: int | None

    @classmethod
    def find(cls, prompt: str, occupation: str) -> Site:
        """The first mention of ``occupation`` in ``prompt``; ``ValueError`` if there is none."""
        m = occupation_regex(occupation).search(prompt)
        if m is None:
            raise ValueError(f"the prompt does not name the occupation {occupation!r}: {prompt!r}")
        plural = m[0].split()[-1].casefold() != occupation.split()[-1].casefold()
        np = None
        if after := _AFTER.match(prompt, m.end()):
            np = after.span("np")
        elif before := _BEFORE.search(prompt[: m.start()]):
            np = before.span("np")
        art = _ARTICLE_BEFORE.search(prompt[: m.start()])
        return cls(prompt, m.start(), m.end(), plural, np, art.start("art") if art else None)

    def forms(self) -> tuple[str, ...]:
        """How a person can be put in: ``replace``, ``who-is``, ``working-as`` or ``including``."""
        if self.plural:
            return ("including",)
        if self.np is not None:
            return ("replace",)
        return ("who-is", "working-as") if self.article_start is not None else ("who-is",)

    def put(self, phrase: str, form: str) -> str:
        """The prompt with ``phrase`` put in by ``form``."""
        p = self.prompt
        rest = p[self.occ_end :]
        if form == "replace":
            start, end = self.np
            return p[:start] + _capital_at_start(phrase, start, p) + p[end:]
        if form == "working-as":
            start = self.article_start
            occ = p[self.occ_start : self.occ_end]
            lead = _capital_at_start(f"{phrase} working as {article(occ)} ", start, p)
            return p[:start] + lead + occ + rest
        comma = "," if re.match(r"\s+\w+ing\b", rest) else ""
        if form == "including":
            comma = "," if re.match(r"\s*\w", rest) else ""
            return p[: self.occ_end] + f", including {phrase}{comma}" + rest
        return p[: self.occ_end] + f" who is {phrase}{comma}" + rest


class OfflineRewriter:
    """Rule-based rewrites adding 1 to ``max_aspects`` aspects (see the module docstring)."""

    name = "offline"

    def __init__(self, max_aspects: int = 3) -> None:
        if not 1 <= max_aspects <= len(ASPECTS):
            raise ValueError(f"max_aspects must be in 1..{len(ASPECTS)}, not {max_aspects}")
        self.max_aspects = max_aspects
        self.model = RULES_VERSION
        self.usage = {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0}

    def rewrite(self, prompt: str, occupation: str, n: int, seed: int) -> list[Rewrite]:
        """Up to ``n`` distinct rewrites, the same ones for the same arguments."""
        if n < 1:
            raise ValueError(f"n must be at least 1, not {n}")
        site = Site.find(prompt, occupation)
        forms = site.forms()
        rng = seeded_rng(seed, occupation, prompt)
        seen = {normalise(prompt)}
        out: list[Rewrite] = []
        for _ in range(50 * n):
            if len(out) == n:
                break
            chosen = set(rng.sample(ASPECTS, rng.randint(1, self.max_aspects)))
            aspects = tuple(a for a in ASPECTS if a in chosen)
            phrase = person_phrase(aspects, rng)
            text = site.put(phrase, rng.choice(forms))
            key = normalise(text)
            if key in seen or not names_occupation(text, occupation):
                continue
            seen.add(key)
            out.append(Rewrite(text, aspects, phrase))
        return out
