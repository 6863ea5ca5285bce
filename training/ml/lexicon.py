"""The prompt lexicon that the paraphrase filter and the optimiser's rewriters share:
the seven diversity aspects' terms (``ATTRIBUTES``), the text normalisation used to
find duplicates, and whole-word occupation matching (singular or plural)."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

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
