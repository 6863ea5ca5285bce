"""Synthetic annotators: plausible demographics and rankings from a stated model.

Latent model (what a ranking is drawn from). Each item has a latent *diversity*

    z(item, annotator) = base[prompt_type]
                         + item_effect(item)
                         + contrast[g] * (base[prompt_type] - 0.5)
                         + sum_a weight[g][a] * touches(prompt, a)
                         + N(0, NOISE_SD)

with g the annotator's group (its ``age_band``) and its ``View`` of the prompts:

* ``base``: stereotypical 0.2, neutral 0.5, diverse 0.8.
* ``item_effect``: N(0, ITEM_SD), fixed per image (seeded by its SHA-256), so
  annotators agree on which images are more or less stereotypical within a type.
* ``contrast``: how strongly a group separates the types. The default views
  (``DEFAULT_VIEWS``): younger bands see the contrast more sharply (>0), older
  bands less (<0), "prefer not to say" 0; no aspect weights.
* ``weight[g][a]``: how a group reads a prompt touching diversity aspect a (the
  catalogue's tags, ``annotation.catalogue.loading.ASPECTS``); negative = reads such a
  depiction as more stereotypical than the others do (e.g. -0.8 on
  ``religion_belief`` puts a diverse prompt with religious dress, z = 0.8 - 0.8,
  among the stereotypical ones).
* noise: per annotator and task, seeded by (seed, annotator number, the task's
  image hashes): by content, not by the ids a database hands out (PostgreSQL
  sequences are not rolled back, SQLite's are), so the same data gives the same
  noise on either.

``PLANTED`` (``simulate(..., planted=PLANTED)``, ``--planted``) is a study whose
groups disagree by design, so that a perspective report can be checked: four
``age_band`` groups (quotas by ``shares``), no contrast, each flipping
(``FLIP``) more aspects than the last: a majority (50%) that reads every aspect
as diverse; 20% that read a larger or smaller body as stereotypical; 20%
religious dress and disability; a minority (10%) all of these and nationality.
No aspect is flipped by more than 30% of the people, so the pooled labels lean
to the majority on each. The planted distance from the majority is the L1 norm
of the weights (0, 0.7, 1.4, 2.8). These are invented views of invented people,
not claims about any real age group.

The ranking orders items by ``z`` ascending: most stereotypical first, as the
portal asks; an attention-check card is put where its instruction says.
Everything is seeded, so the same seed on the same data gives the same rankings.
Users are named ``synthetic-<seed>-<n>`` and their profiles have
``is_synthetic=True``; rankings are stored through ``annotation.participants.services``.

Careless annotators (``careless``: the fraction drawn, seeded) ignore the
latent model and the cards' texts; their kind is stored in
``AnnotatorProfile.synthetic_kind`` so a test can score the quality policy:

* ``random``: a uniformly random order, 2-4 s per item;
* ``shown``: submits the order the cards were shown in, 1-3 s per task;
* ``hurried``: moves one random card to the top and submits the rest as shown,
  1-4 s per task;
* ``equal`` (a format with ties: rank_ties, pairwise): calls every card equal, 1-3 s.

Each answers in the study's question format (``answering``: ties, top-k, best-worst, pairs).

Past 400 lines because this docstring states the whole model it draws from (55 lines).
"""

from __future__ import annotations

import functools
import random
from collections.abc import Mapping
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model

from annotation.assignment.next_task import next_task
from annotation.catalogue.loading import prompt_aspects
from annotation.errors import AnnotatorExcluded
from annotation.models import (
    AnnotatorStatus,
    DemographicField,
    Item,
    RankingTask,
    Study,
    SyntheticKind,
)
from annotation.models.studies import DEFAULT_STUDY_SLUG
from annotation.participants import services
from annotation.rankings import selectors
from annotation.stats.tiers import flatten, is_strict
from annotation.studies import answering
from annotation.studies import lifecycle as studies

BASE = {"stereotypical": 0.2, "neutral": 0.5, "diverse": 0.8}
ITEM_SD = 0.08
NOISE_SD = 0.12
GROUP_BIAS = {
    "18-24": 0.4,
    "25-34": 0.25,
    "35-44": 0.1,
    "45-54": 0.0,
    "55-64": -0.15,
    "65-74": -0.3,
    "75 or over": -0.4,
}
PREFER_NOT = DemographicField.PREFER_NOT_TO_SAY
VIEW_FIELD = "age_band"


@dataclass(frozen=True)
class View:
    """How one group reads prompts: type ``contrast`` and a weight per diversity aspect."""

    contrast: float = 0.0
    aspects: Mapping[str, float] = field(default_factory=dict)

    def distance(self, other: View) -> float:
        """Planted distance: L1 between the aspect weights (plus the contrasts)."""
        names = set(self.aspects) | set(other.aspects)
        return abs(self.contrast - other.contrast) + sum(
            abs(self.aspects.get(a, 0.0) - other.aspects.get(a, 0.0)) for a in names
        )


@dataclass(frozen=True)
class Planted:
    """A study whose groups (values of ``VIEW_FIELD``) hold stated views in stated shares."""

    views: Mapping[str, View]
    shares: Mapping[str, float]
    majority: str


DEFAULT_VIEWS = {band: View(contrast=bias) for band, bias in GROUP_BIAS.items()}
FLIP = -0.7  # a diverse prompt (0.8) read at 0.1: among the stereotypical ones (0.2)
PLANTED = Planted(
    views={
        "25-34": View(),
        "35-44": View(aspects={"body_type": FLIP}),
        "45-54": View(aspects={"religion_belief": FLIP, "ability_disability": FLIP}),
        "65-74": View(
            aspects=dict.fromkeys(
                ("religion_belief", "body_type", "ability_disability", "nationality"), FLIP
            )
        ),
    },
    shares={"25-34": 0.5, "35-44": 0.2, "45-54": 0.2, "65-74": 0.1},
    majority="25-34",
)
FREE_TEXT = {
    "nationality": [
        "British",
        "Indian",
        "Nigerian",
        "Brazilian",
        "German",
        "Chinese",
        "American",
        "Mexican",
        "Kenyan",
        "Japanese",
        "Filipino",
        "Egyptian",
    ],
    "country_of_residence": [
        "United Kingdom",
        "India",
        "Nigeria",
        "Brazil",
        "Germany",
        "China",
        "United States",
        "Mexico",
        "Kenya",
        "Japan",
        "Canada",
        "Spain",
    ],
    "ethnicity": [
        "White",
        "Black African",
        "South Asian",
        "East Asian",
        "Mixed",
        "Latino",
        "Arab",
        "Black Caribbean",
    ],
    "first_language": [
        "English",
        "Hindi",
        "Yoruba",
        "Portuguese",
        "German",
        "Mandarin",
        "Spanish",
        "Japanese",
        "Arabic",
        "Swahili",
    ],
}


def draw_demographics(rng: random.Random, fields: list[DemographicField]) -> dict:
    """One plausible answer per active field; about 1 in 10 'prefer not to say', 1 in 20 blank."""
    answers = {}
    for f in fields:
        roll = rng.random()
        if roll < 0.05:
            continue
        if roll < 0.15:
            answers[f.key] = PREFER_NOT
        elif f.choices:
            answers[f.key] = rng.choice(f.choices)
        else:
            answers[f.key] = rng.choice(FREE_TEXT.get(f.key, ["other"]))
    return answers


def planted_groups(count: int, planted: Planted, seed: int) -> list[str]:
    """Each of ``count`` annotators' group: quotas by the shares (largest remainder), shuffled."""
    quotas = {g: int(count * share) for g, share in planted.shares.items()}
    left = sorted(planted.shares, key=lambda g: (-(count * planted.shares[g] % 1), g))
    for g in left[: count - sum(quotas.values())]:
        quotas[g] += 1
    groups = [g for g in sorted(quotas) for _ in range(quotas[g])]
    random.Random(f"{seed}:planted").shuffle(groups)
    return groups


def item_effect(item: Item) -> float:
    return random.Random(item.image_sha256).gauss(0.0, ITEM_SD)


@functools.cache
def _aspects() -> dict[tuple[str, str], frozenset[str]]:
    return prompt_aspects()


def aspects_of(item: Item) -> frozenset[str]:
    """The diversity aspects the item's (original) prompt touches, from the catalogue."""
    prompt = item.prompt
    return _aspects().get((prompt.occupation.name, prompt.prompt_type), frozenset())


def latent_order(
    items: list[Item],
    demographics: dict,
    rng: random.Random,
    views: Mapping[str, View] = DEFAULT_VIEWS,
) -> list[int]:
    """Item ids by latent diversity ascending (most stereotypical first)."""
    scores = latent_scores(items, demographics, rng, views)
    return sorted(scores, key=lambda pk: (scores[pk], pk))


def latent_scores(
    items: list[Item],
    demographics: dict,
    rng: random.Random,
    views: Mapping[str, View] = DEFAULT_VIEWS,
) -> dict[int, float]:
    """``{item id: the diversity this annotator perceives}`` (module docstring)."""
    view = views.get(demographics.get(VIEW_FIELD), View())
    scores = {}
    for item in sorted(items, key=lambda i: i.pk):
        base = BASE[item.prompt.prompt_type]
        z = base + item_effect(item) + view.contrast * (base - 0.5)
        if view.aspects:
            z += sum(view.aspects.get(a, 0.0) for a in aspects_of(item))
        scores[item.pk] = z + rng.gauss(0.0, NOISE_SD)
    return scores


CARELESS_KINDS = (SyntheticKind.RANDOM, SyntheticKind.SHOWN, SyntheticKind.HURRIED)
TIED_KINDS = (*CARELESS_KINDS, SyntheticKind.EQUAL)  # where the format lets cards tie


def careless_kinds(count: int, fraction: float, seed: int, ties: bool = False) -> list[str]:
    """Each of ``count`` annotators' kind: ``round(fraction * count)`` of them, drawn at
    random, careless (the kinds in turn; ``equal`` among them where the format has ties),
    the rest careful."""
    if not 0 <= fraction <= 1:
        raise ValueError(f"the careless fraction must be in [0, 1], got {fraction}")
    rng = random.Random(f"{seed}:careless")
    drawn = rng.sample(range(count), round(fraction * count))
    kinds = [SyntheticKind.CAREFUL.value] * count
    cycle = TIED_KINDS if ties else CARELESS_KINDS
    for i, n in enumerate(drawn):
        kinds[n] = cycle[i % len(cycle)].value
    return kinds


def as_answer(tiers) -> list:
    """Tiers as the submit takes them: a strict one as its order (a blinded task's answer
    names its cards in order), else the tiers."""
    return flatten(tiers) if is_strict(tiers) else [list(t) for t in tiers]


def careless_order(kind: str, shown: list[int], rng: random.Random) -> tuple[list[int], float]:
    """A careless annotator's strict order of the shown cards and the seconds it took."""
    tiers, seconds = answering.careless(kind, shown, Study.Question.RANK, None, rng)
    return flatten(tiers), seconds


def validation_treated(study: Study) -> set[int]:
    """The ids of a validation study's treatment images."""
    from annotation.models.validation import Condition, ConditionImage

    return set(
        ConditionImage.objects.filter(
            prompt__condition__study=study, prompt__condition__role=Condition.Role.TREATMENT
        ).values_list("item_id", flat=True)
    )


def validation_order(
    task: RankingTask, items: list[Item], treated: set[int], effect: float, rng: random.Random
) -> list[int]:
    """A validation task's order under ``quality.validation_sim``'s model (Plackett-Luce,
    the treatment's images shifted up by ``effect``), most stereotypical first, with an
    attention-check card put where its instruction says."""
    import numpy as np

    from annotation.stats.validation_sim import planted_order  # numpy and scipy: only when asked

    card = task.check_item_id
    ids = sorted(i.pk for i in items if i.pk != card)
    where = planted_order(
        np.array([i in treated for i in ids]), effect, np.random.default_rng(rng.getrandbits(64))
    )
    order = [ids[i] for i in where]
    if card is not None:
        order.insert(min(task.check_position, len(order)), card)
    return order


def simulate(
    count: int,
    tasks_per_annotator: int,
    seed: int = 0,
    careless: float = 0.0,
    planted: Planted | None = None,
    study: Study | None = None,
    effect: float = 0.0,
) -> dict:
    """Create (or reuse) ``count`` synthetic annotators of the study (the default one
    unless given), each ranking up to M tasks (with ``planted``, in its groups and
    views; else the default views). In a validation study careful annotators rank by
    ``validation_order``: the treatment's images preferred by ``effect`` (0: a null study).

    An annotator the quality policy excludes stops there; ``excluded`` counts them.
    """
    study = study or studies.default_study()
    # The default study's annotators keep the names they had before studies existed.
    prefix = "synthetic" if study.slug == DEFAULT_STUDY_SLUG else f"synthetic-{study.slug}"
    User = get_user_model()
    fields = list(selectors.demographic_questions())
    question, k = study.question_format, study.question_k
    ties = question in (Study.Question.RANK_TIES, Study.Question.PAIRWISE)
    kinds = careless_kinds(count, careless, seed, ties)
    views = planted.views if planted else DEFAULT_VIEWS
    groups = planted_groups(count, planted, seed) if planted else None
    treated = validation_treated(study) if study.kind == Study.Kind.VALIDATION else None
    made_users = rankings = excluded = 0
    seen: dict[int, tuple[RankingTask, list[Item]]] = {}
    for n in range(count):
        user, new_user = User.objects.get_or_create(username=f"{prefix}-{seed}-{n:04d}")
        if new_user:
            user.set_unusable_password()
            user.save(update_fields=["password"])
            made_users += 1
        profile = services.get_profile(user, study)
        if (
            not profile.is_synthetic
            or profile.quota < tasks_per_annotator
            or profile.synthetic_kind != kinds[n]
        ):
            profile.is_synthetic = True
            profile.synthetic_kind = kinds[n]
            profile.quota = max(profile.quota, tasks_per_annotator)
            profile.save(update_fields=["is_synthetic", "synthetic_kind", "quota"])
        services.give_consent(profile)
        if new_user or not profile.demographics:
            answers = draw_demographics(random.Random(f"{seed}:{n}:d"), fields)
            if groups:
                answers[VIEW_FIELD] = groups[n]
            services.save_demographics(profile, answers)
        done = profile.rankings.count()
        while done < tasks_per_annotator:
            try:
                assignment = next_task(profile)
            except AnnotatorExcluded:
                break
            if assignment is None:
                break
            if assignment.task_id not in seen:  # a task's items, read once per run
                task = RankingTask.objects.get(pk=assignment.task_id)
                seen[task.pk] = task, list(task.items.select_related("prompt__occupation"))
            task, items = seen[assignment.task_id]
            hashes = ",".join(sorted(item.image_sha256 for item in items))
            rng = random.Random(f"{seed}:{n}:{hashes}")
            card = task.check_item_id
            if kinds[n] == SyntheticKind.CAREFUL and treated is not None and not task.is_gold:
                order = validation_order(task, items, treated, effect, rng)
                seconds = answering.careful_seconds(question, len(items), rng, k)
            elif kinds[n] == SyntheticKind.CAREFUL:
                kept = [i for i in items if i.pk != card]
                scores = latent_scores(kept, profile.demographics, rng, views)
                tiers = answering.from_scores(scores, question, k, card, task.check_position)
                order = as_answer(tiers)
                seconds = answering.careful_seconds(question, len(items), rng, k)
            else:
                tiers, seconds = answering.careless(
                    kinds[n], assignment.shown_order, question, k, rng
                )
                order = as_answer(tiers)
            # A synthetic annotator has no participation, so no portal language: none read.
            _, created = services.submit_ranking(
                profile, task.pk, order, seconds_spent=seconds, language=""
            )
            rankings += created
            done += 1
        excluded += profile.status == AnnotatorStatus.EXCLUDED
    return {
        "annotators": made_users,
        "rankings": rankings,
        "careless": sum(k != SyntheticKind.CAREFUL for k in kinds),
        "excluded": excluded,
    }
