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

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from training.ml.paraphrase.base import Candidate, Original, Rejection

REASONS = ("empty", "duplicate", "occupation", "attribute", "cosine")

_DECADES = ("twenties", "thirties", "forties", "fifties", "sixties", "seventies", "eighties")
_DECADE_DIGITS = dict(zip(_DECADES, ("20", "30", "40", "50", "60", "70", "80"), strict=True))


def _terms(text: str) -> tuple[str, ...]:
    return tuple(t.strip() for t in text.split(","))


# The seven aspects of diversity the prompts vary. Each term is a regular
# expression matched as a whole word, case-insensitively; the first spelling
# names the term in a rejection's detail.
ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "religion/belief": _terms(
        "sikh, muslim, hindu, jewish, jew, buddhist, christian, catholic, protestant, "
        "orthodox, mormon, jain, atheist, pagan, rabbi, imam, priest, nun, monk, pastor, "
        "vicar, hijab, headscarf, turban, kippah, yarmulke, kufi, bindi, niqab, burqa, "
        "crucifix, rosary, church, synagogue, mosque, temple"
    ),
    "race/ethnic origin": _terms(
        "white, black, asian, south asian, east asian, southeast asian, latina, latino, "
        "latinx, hispanic, indigenous, aboriginal, native american, first nations, arab, "
        "caucasian, african, african american, pacific islander, polynesian, roma, "
        "mixed-race, biracial, brown-skinned, dark-skinned, light-skinned, gele, headwrap"
    ),
    "gender identity/expression": _terms(
        "wom[ae]n, m[ae]n, girls?, boys?, female, male, lady|ladies, gentlem[ae]n, "
        "non-binary|nonbinary, transgender, trans, genderqueer, gender-fluid|genderfluid, "
        "agender, cisgender, gay, lesbian, bisexual, queer, androgynous, beard|bearded, "
        "clean-shaven, moustache|mustache, makeup, feminine, masculine"
    ),
    "nationality": _terms(
        "nigerian|nigeria, japanese|japan, kenyan|kenya, korean|korea, "
        "vietnamese|vietnam, mexican|mexico, ghanaian|ghana, thai|thailand, "
        "scandinavian|scandinavia, filipino|filipina|philippines, brazilian|brazil, "
        "egyptian|egypt, pakistani|pakistan, chinese|china, polish|poland, samoan|samoa, "
        "moroccan|morocco, bolivian|bolivia, senegalese|senegal, irish|ireland, "
        "nepali|nepalese|nepal, jamaican|jamaica, ethiopian|ethiopia, indian|india, "
        "australian|australia, american|usa, canadian|canada, british|britain|uk, "
        "english|england, scottish|scotland, welsh|wales, french|france, german|germany, "
        "italian|italy, spanish|spain, portuguese|portugal, dutch|netherlands, "
        "swedish|sweden, norwegian|norway, danish|denmark, finnish|finland, greek|greece, "
        "russian|russia, ukrainian|ukraine, romanian|romania, turkish|turkey, "
        "iranian|iran, iraqi|iraq, syrian|syria, lebanese|lebanon, israeli|israel, "
        "palestinian|palestine, saudi, afghan|afghanistan, bangladeshi|bangladesh, sri "
        "lankan|sri lanka, indonesian|indonesia, malaysian|malaysia, mongolian|mongolia, "
        "tibetan|tibet, cuban|cuba, colombian|colombia, peruvian|peru, "
        "argentinian|argentine|argentina, chilean|chile, haitian|haiti, somali|somalia, "
        "sudanese|sudan, south african|south africa, zimbabwean|zimbabwe, ugandan|uganda, "
        "tanzanian|tanzania, congolese|congo, cameroonian|cameroon, maori, fijian|fiji, "
        "tongan|tonga, immigrant, refugee, foreign"
    ),
    "ability/disability": _terms(
        "wheelchair, deaf, hard of hearing, hearing aid, cochlear implant, blind, visual "
        "impairment|visually impaired, prosthetic, amputee, down syndrome, "
        "autistic|autism, cane, crutch|crutches, guide dog, sign language|signing, screen "
        "reader, disabled|disability, limb difference"
    ),
    "age": _terms(
        "young, younger, old, older, elderly, middle-aged, teenage|teenager|teen, "
        "child|children|kid|kids, toddler, senior, grey-haired|gray-haired, balding"
    )
    + tuple(f"{d}|{_DECADE_DIGITS[d]}s" for d in _DECADES),
    "body type": _terms(
        "tall, short, slim, thin, skinny, petite, stocky, burly, muscular, heavyset, "
        "stout, overweight, plus-size|plus size, larger body|larger build, fat, obese, "
        "curvy, lean, athletic build"
    ),
}


def _term_regex(term: str) -> re.Pattern[str]:
    spaced = term.replace(" ", "\0").replace("-", "[- ]?").replace("\0", r"[\s-]+")
    return re.compile(rf"\b(?:{spaced})\b", re.IGNORECASE)


_TERMS: tuple[tuple[str, str, re.Pattern[str]], ...] = tuple(
    (aspect, term.split("|")[0].replace("[ae]", "a").replace("s?", ""), _term_regex(term))
    for aspect, terms in ATTRIBUTES.items()
    for term in terms
)


def normalise(text: str) -> str:
    """Text compared for duplicates: case folded, punctuation dropped, spaces collapsed."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = "".join(" " if unicodedata.category(c).startswith("P") else c for c in text)
    return " ".join(text.split())


def attribute_terms(text: str) -> set[tuple[str, str]]:
    """The ``(aspect, term)`` pairs of ``ATTRIBUTES`` that ``text`` contains."""
    return {(aspect, name) for aspect, name, rx in _TERMS if rx.search(text)}


def _plural(word: str) -> str:
    if re.search(r"(s|x|z|ch|sh)$", word):
        return word + "es"
    if re.search(r"[^aeiou]y$", word):
        return word[:-1] + "ies"
    if word.endswith("man"):
        return word[:-3] + "men"
    return word + "s"


@lru_cache(maxsize=4096)
def occupation_regex(occupation: str) -> re.Pattern[str]:
    """Whole-word match of an occupation or its plural (last word pluralised)."""
    words = occupation.split()
    if not words:
        raise ValueError("an occupation must not be empty")
    head = r"\s+".join(re.escape(w) for w in words[:-1])
    last = f"(?:{re.escape(words[-1])}|{re.escape(_plural(words[-1]))}|{re.escape(words[-1])}s)"
    body = rf"{head}\s+{last}" if head else last
    return re.compile(rf"(?<!\w){body}(?!\w)", re.IGNORECASE)


def names_occupation(text: str, occupation: str) -> bool:
    """Whether ``text`` names ``occupation`` (singular or plural, as a whole word)."""
    return bool(occupation_regex(occupation).search(text))


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
