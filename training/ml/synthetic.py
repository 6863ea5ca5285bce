"""A synthetic labelled, paraphrased dataset (tests, benchmarks, int8 calibration texts):
occupations x prompt types x phrasings, deterministic by seed, no annotators needed."""

from __future__ import annotations

import random

from training.ml.examples import Example

_OCCUPATIONS = (
    "nurse",
    "CEO",
    "engineer",
    "teacher",
    "pilot",
    "firefighter",
    "secretary",
    "surgeon",
    "plumber",
    "librarian",
    "programmer",
    "housekeeper",
    "mechanic",
    "scientist",
    "chef",
    "farmer",
    "lawyer",
    "dancer",
    "soldier",
    "cashier",
    "architect",
    "electrician",
    "judge",
    "hairdresser",
    "professor",
    "janitor",
    "accountant",
    "pharmacist",
    "carpenter",
    "banker",
    "receptionist",
    "police officer",
    "dentist",
    "journalist",
    "babysitter",
    "truck driver",
    "model",
    "construction worker",
    "psychologist",
    "athlete",
)
_TYPES = {
    "stereotypical": (0.1, ("a young man", "a white man in a suit", "a man with a beard")),
    "neutral": (0.5, ("a person", "someone at work", "a worker")),
    "diverse": (
        0.9,
        (
            "an elderly Black woman using a wheelchair",
            "a non-binary South Asian person in a hijab",
            "a plus-size Indigenous woman over sixty",
        ),
    ),
}
_DETAILS = (
    "at work",
    "in the office",
    "smiling",
    "in daylight",
    "at night",
    "in a city",
    "outdoors",
    "in a portrait",
    "with colleagues",
    "close up",
    "in the morning",
    "in winter",
)
_PHRASINGS = (
    "Generate an image of {who} working as a {occ}, {detail}",
    "Create a picture showing {who} who is a {occ}, {detail}",
    "Draw {who} employed as a {occ}, {detail}",
    "An illustration of {who}, a {occ}, {detail}",
    "Please render {who} who works as a {occ}, {detail}",
    "A photo of {who} doing the job of a {occ}, {detail}",
    "Depict {who} as a {occ}, {detail}",
    "Show me {who} in the role of a {occ}, {detail}",
    "Make an image where {who} is a {occ}, {detail}",
)


def synthetic_examples(
    n_occupations: int = 40, prompts_per_type: int = 10, variants: int = 9, seed: int = 0
) -> list[Example]:
    """A deterministic stand-in for a labelled, paraphrased dataset (tests, benchmarks).

    ``n_occupations x 3 prompt types x prompts_per_type`` originals, each with
    ``variants`` phrasings (the first is the original) sharing its group and
    label; labels are 0.1 / 0.5 / 0.9 by type plus uniform noise of +-0.1.
    The defaults give the seed's 1,200 originals and 10,800 texts.
    """
    if not 1 <= n_occupations <= len(_OCCUPATIONS) or not 1 <= variants <= len(_PHRASINGS):
        raise ValueError(f"at most {len(_OCCUPATIONS)} occupations and {len(_PHRASINGS)} variants")
    if not 1 <= prompts_per_type <= 3 * len(_DETAILS):
        raise ValueError(f"at most {3 * len(_DETAILS)} prompts per type")
    rng = random.Random(seed)
    examples = []
    for occ in _OCCUPATIONS[:n_occupations]:
        for ptype, (base, people) in _TYPES.items():
            for k in range(prompts_per_type):
                who, detail = people[k % len(people)], _DETAILS[k // len(people) % len(_DETAILS)]
                detail = f"{detail}, scene {k}" if k >= len(people) * len(_DETAILS) else detail
                label = min(1.0, max(0.0, base + rng.uniform(-0.1, 0.1)))
                group = f"{occ}/{ptype}/{k}"
                for phrasing in _PHRASINGS[:variants]:
                    text = phrasing.format(who=who, occ=occ, detail=detail)
                    examples.append(Example(text, label, group, occ, ptype))
    return examples
