"""The DJ-PO prompt optimiser: the offline rewriter and the optimisation loop.

The LLM rewriter has its tests in ``test_ml_optimise_llm.py``. Aspects are
checked against the paraphrase filter's attribute lexicon, a table written
apart from the rewriter's phrases; the occupation with a plain regular
expression of the test's own.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from training.ml.lexicon import ATTRIBUTES, attribute_terms
from training.ml.optimise import (
    ASPECTS,
    OfflineRewriter,
    Rewrite,
    make_rewriter,
    optimise,
)
from training.ml.optimise.offline import GENDER_NOUNS, PHRASES

CATALOGUE = Path(__file__).resolve().parents[2] / "annotation" / "catalogue" / "catalogue.json"
GENDER = "gender identity/expression"


def catalogue() -> list[tuple[str, str, str]]:
    """``(occupation, prompt type, prompt)`` for every catalogue prompt, read from the JSON."""
    data = json.loads(CATALOGUE.read_text(encoding="utf-8"))
    return [
        (occ["name"], kind, text)
        for occ in data["occupations"]
        for kind, text in occ["prompts"].items()
    ]


def names(text: str, occupation: str) -> bool:
    """The test's own check: the occupation, or it plus "s", as whole words."""
    return re.search(rf"\b{re.escape(occupation)}s?\b", text, re.IGNORECASE) is not None


def aspects_of(text: str) -> set[str]:
    return {aspect for aspect, _ in attribute_terms(text)}


def count_aspects(texts: list[str]) -> np.ndarray:
    """A stand-in reward: how many of the seven aspects the text mentions."""
    return np.array([len(aspects_of(t)) for t in texts], dtype=float)


# -- the offline rewriter --------------------------------------------------------------


def test_offline_is_deterministic_by_seed():
    rewriter = OfflineRewriter()
    prompt = "Generate an image of a nurse"
    first = rewriter.rewrite(prompt, "nurse", 8, seed=3)
    assert first == OfflineRewriter().rewrite(prompt, "nurse", 8, seed=3)
    assert len(first) == 8 and len({r.text for r in first}) == 8
    other = rewriter.rewrite(prompt, "nurse", 8, seed=4)
    assert {r.text for r in other} != {r.text for r in first}
    assert make_rewriter("offline").rewrite(prompt, "nurse", 8, seed=3) == first


def test_every_phrasing_carries_exactly_its_aspect():
    assert tuple(ATTRIBUTES) == ASPECTS and len(ASPECTS) == 7
    assert set(PHRASES) | {GENDER} == set(ASPECTS)
    for aspect, options in PHRASES.items():
        for pre, post in options:
            words = f"{pre} person {post.format(their='their')}"
            assert aspects_of(words) == {aspect}, words
    for noun, _ in GENDER_NOUNS:
        assert aspects_of(noun) == {GENDER}, noun


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_catalogue_rewrite_names_the_occupation_and_records_its_aspects(seed):
    rewriter = OfflineRewriter()
    prompts = catalogue()
    assert len(prompts) == 120
    for occupation, _, prompt in prompts:
        rewrites = rewriter.rewrite(prompt, occupation, 8, seed)
        assert len(rewrites) == 8
        for r in rewrites:
            assert names(r.text, occupation), r.text
            assert r.text != prompt and r.phrase.lower() in r.text.lower()
            assert 1 <= len(r.aspects) <= 3
            assert list(r.aspects) == [a for a in ASPECTS if a in r.aspects]
            assert aspects_of(r.phrase) == set(r.aspects), (r.phrase, r.aspects)
            first, second = r.phrase.split()[:2]
            assert first == ("an" if second[0].lower() in "aeiou" else "a"), r.phrase


def test_stereotypical_person_is_replaced_and_the_scene_kept():
    rewriter = OfflineRewriter()
    person = re.compile(
        r"^(?P<lead>Generate an image of an? [^:]+: )"
        r"(?P<np>an? .*?\b(?:man|woman|girl|boy)\b(?: in (?:his|her) \w+ties)?)(?P<scene>.*)$"
    )
    checked = 0
    for occupation, kind, prompt in catalogue():
        if kind != "stereotypical":
            continue
        m = person.match(prompt)
        assert m, prompt
        for r in rewriter.rewrite(prompt, occupation, 4, seed=9):
            assert r.text == m["lead"] + r.phrase + m["scene"], (prompt, r.text)
            checked += 1
    assert checked == 160
    nurse = rewriter.rewrite(
        "Generate an image of a nurse: a young slim woman in a white uniform and cap, "
        "smiling at a patient",
        "nurse",
        3,
        seed=0,
    )
    for r in nurse:
        assert r.text.endswith(" in a white uniform and cap, smiling at a patient")
        assert "young slim woman" not in r.text


def test_a_neutral_prompt_gets_a_person_after_or_before_the_occupation():
    forms = set()
    for r in OfflineRewriter().rewrite("Generate an image of an accountant", "accountant", 12, 1):
        if r.text == f"Generate an image of an accountant who is {r.phrase}":
            forms.add("who-is")
        else:
            assert r.text == f"Generate an image of {r.phrase} working as an accountant"
            forms.add("working-as")
    assert forms == {"who-is", "working-as"}


def test_plurals_articles_and_capitals():
    rewriter = OfflineRewriter()
    for r in rewriter.rewrite("Three nurses at work", "nurse", 5, seed=2):
        assert r.text == f"Three nurses, including {r.phrase}, at work"
    for r in rewriter.rewrite("A young woman working as a nurse, smiling", "nurse", 5, seed=2):
        assert r.text == f"{r.phrase[0].upper()}{r.phrase[1:]} working as a nurse, smiling"
    for r in rewriter.rewrite("An image of the nurse checking a chart", "nurse", 5, seed=2):
        assert r.text == f"An image of the nurse who is {r.phrase}, checking a chart"
    with pytest.raises(ValueError, match="does not name the occupation 'nurse'"):
        rewriter.rewrite("A nursery full of toys", "nurse", 3, seed=0)
    with pytest.raises(ValueError, match="n must be at least 1"):
        rewriter.rewrite("A nurse", "nurse", 0, seed=0)
    with pytest.raises(ValueError, match="max_aspects must be in 1..7"):
        OfflineRewriter(max_aspects=0)


# -- the optimiser ---------------------------------------------------------------------


class Scripted:
    """A rewriter that answers fixed lists, one per call, and records what it was asked."""

    name, model = "scripted", "test"

    def __init__(self, *answers: list[Rewrite]) -> None:
        self.answers = list(answers)
        self.asked: list[tuple[str, int, int]] = []
        self.usage: dict = {}

    def rewrite(self, prompt: str, occupation: str, n: int, seed: int) -> list[Rewrite]:
        self.asked.append((prompt, n, seed))
        return self.answers.pop(0) if self.answers else []


def test_optimise_reaches_the_threshold_with_the_offline_rewriter():
    prompt = "Generate an image of a surgeon"
    result = optimise(prompt, "surgeon", count_aspects, 2.0, OfflineRewriter(), n=3, seed=5)
    assert result.original.score == 0.0 and result.original.flagged
    assert result.reached and len(result.candidates) == 3
    scores = [c.score for c in result.candidates]
    assert scores == sorted(scores, reverse=True)
    for c in result.candidates:
        assert names(c.text, "surgeon")
        assert c.score == len(aspects_of(c.text)) >= 2 and not c.flagged
        assert c.gain == c.score - result.original.score
        assert set(c.aspects) == aspects_of(c.text)
    assert result.tried == 8 * result.rounds and result.lost_occupation == 0
    assert result.best == result.candidates[0]
    again = optimise(prompt, "surgeon", count_aspects, 2.0, OfflineRewriter(), n=3, seed=5)
    assert again == result
    other = optimise(prompt, "surgeon", count_aspects, 2.0, OfflineRewriter(), n=3, seed=6)
    assert [c.text for c in other.candidates] != [c.text for c in result.candidates]


def test_optimise_returns_a_passing_original_unchanged():
    prompt = "Generate an image of a pilot who is a Japanese woman in her forties"
    never = Scripted()
    result = optimise(prompt, "pilot", count_aspects, 2.0, never)
    assert [c.text for c in result.candidates] == [prompt]
    assert result.candidates[0] == result.original and result.original.score == 3.0
    assert (result.rounds, result.tried, result.lost_occupation) == (0, 0, 0)
    assert never.asked == []


def test_optimise_never_returns_a_rewrite_without_the_occupation():
    good = ("race/ethnic origin", "age")
    rewriter = Scripted(
        [
            Rewrite("A Black woman from Japan in a wheelchair", ASPECTS),
            Rewrite("A nursery run by an older Sikh man wearing a turban", good),
            Rewrite("Two nurses, one an older Black man", good),
            Rewrite("Generate an image of a nurse", ()),  # the original again
            Rewrite("Generate an image of a young nurse", ("age",)),
        ],
        [Rewrite("An elderly Arab NURSE from Peru with a hearing aid", good)],
    )
    result = optimise(
        "Generate an image of a nurse", "nurse", count_aspects, 2.0, rewriter, n=2, rounds=5
    )
    assert [c.text for c in result.candidates] == [
        "An elderly Arab NURSE from Peru with a hearing aid",
        "Two nurses, one an older Black man",
    ]
    assert all(names(c.text, "nurse") for c in result.candidates)
    assert (result.tried, result.lost_occupation, result.rounds) == (5, 2, 2)
    # Round 2 started from the best of round 1.
    assert rewriter.asked == [
        ("Generate an image of a nurse", 8, 1),
        ("Two nurses, one an older Black man", 8, 2),
    ]


def test_optimise_stops_after_the_rounds_with_the_best_it_found():
    result = optimise(
        "Generate an image of a chef", "chef", count_aspects, 10.0, OfflineRewriter(), seed=1
    )
    assert result.candidates == () and not result.reached
    assert result.rounds == 3 and 16 < result.tried <= 24 and result.lost_occupation == 0
    assert result.best.flagged and result.best.score == 3.0  # three aspects at most


def test_optimise_checks_its_inputs():
    rw = OfflineRewriter()
    with pytest.raises(ValueError, match="does not name the occupation 'chef'"):
        optimise("Generate an image of a cook", "chef", count_aspects, 1.0, rw)
    with pytest.raises(ValueError, match="at least 1"):
        optimise("A chef", "chef", count_aspects, 1.0, rw, per_round=0)
    with pytest.raises(ValueError, match="threshold must be a finite number"):
        optimise("A chef", "chef", count_aspects, float("nan"), rw)
    with pytest.raises(ValueError, match="score_fn returned 2 scores for 1 texts"):
        optimise("A chef", "chef", lambda texts: np.zeros(2), 1.0, rw)
    with pytest.raises(ValueError, match="not a finite number"):
        optimise("A chef", "chef", lambda texts: np.full(len(texts), np.nan), 1.0, rw)
    with pytest.raises(ValueError, match="unknown rewriter 'gpt'"):
        make_rewriter("gpt")


@pytest.mark.slow
def test_optimise_with_minilm_and_a_linear_head_on_the_catalogue(minilm):
    """A head along the mean difference of diverse and other prompts, threshold at the midpoint."""
    prompts = catalogue()
    vectors = minilm.encode([p for _, _, p in prompts])
    diverse = np.array([kind == "diverse" for _, kind, _ in prompts])
    w = vectors[diverse].mean(axis=0) - vectors[~diverse].mean(axis=0)
    threshold = float((vectors[diverse] @ w).mean() + (vectors[~diverse] @ w).mean()) / 2

    def score(texts: list[str]) -> np.ndarray:
        return minilm.encode(texts) @ w

    results = [
        (occ, optimise(p, occ, score, threshold, OfflineRewriter(), n=2, seed=0))
        for occ, kind, p in prompts
        if kind != "diverse"
    ]
    assert len(results) == 80
    assert sum(r.lost_occupation for _, r in results) == 0
    reached = [r for _, r in results if r.reached]
    assert len(reached) >= 0.9 * len(results)
    for occ, r in results:
        if not r.original.flagged:
            assert r.candidates == (r.original,) and r.original.score >= threshold
            continue
        assert r.original.score < threshold
        for c in r.candidates:
            assert names(c.text, occ) and c.round >= 1
            assert c.score >= threshold and c.gain == c.score - r.original.score > 0
    assert np.mean([r.best.gain for _, r in results if r.best]) > 0
