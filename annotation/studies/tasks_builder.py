"""Build ranking tasks from items: one occupation per task, prompt types mixed.

Three kinds, all alike to an annotator (same size, same mix of prompt types):

* ordinary tasks (``build_tasks``), every item in one; a fraction of them, the
  *agreement subset*, is ranked by several annotators, the rest by ``overlap``;
* gold tasks (``build_gold_tasks``), from the catalogue's clearest contrast:
  every stereotypical item keyed before every diverse one;
* attention-check tasks (``build_check_tasks``): one card shows an instruction
  (``models.check_instruction``) instead of its prompt.

A pairwise study's ordinary tasks are pairs (``cycle_pairs``): the items of each mixed chunk
of six form a cycle, so each item is compared with two others of its occupation, of other
prompt types where the chunk has them, and the pairs of a chunk connect (scores fitted from
pairs need connected comparisons); disjoint pairs would compare each item once.

Gold and check tasks reuse items that are already in ordinary tasks. Each builder
works inside one study (the default one unless given): its items, its tasks.
``build_study_tasks`` (the ``build_tasks`` command) makes all three, as many gold and
check tasks per occupation as the study says (``Study.gold_per_occupation`` and
``checks_per_occupation``, 1 each by default; 0, with the reason recorded on the study,
turns a kind off): quality control is on unless someone said why not.
"""

import random
from collections import defaultdict
from itertools import zip_longest

from django.db import transaction
from django.db.models import Count, Q

from annotation.models import Item, Occupation, PromptType, RankingTask, Study, TaskItem
from annotation.studies import lifecycle as studies


def mixed_chunks(items_by_type: dict[str, list], size: int) -> list[list]:
    """Interleave the types round-robin, then cut into tasks of ``size``.

    A last short chunk is merged into the tasks before it only when it cannot
    stand alone (fewer than 2 items), so every item lands in some task.
    """
    interleaved = [
        item for group in zip_longest(*items_by_type.values()) for item in group if item is not None
    ]
    chunks = [interleaved[i : i + size] for i in range(0, len(interleaved), size)]
    if len(chunks) > 1 and len(chunks[-1]) < 2:
        chunks[-2].extend(chunks.pop())
    return chunks


PAIR_CHUNK = 6
# Formats whose answer has a fixed shape (k singles and the rest; best, middle, worst): every
# task holds the study's task size, a short chunk filled up (``filled``).
FIXED_SIZE = (Study.Question.TOP_K, Study.Question.BEST_WORST)


def filled(chunk: list, pool: list, size: int, rng: random.Random) -> list:
    """``chunk`` (cut down or) topped up to ``size`` with other items of ``pool`` (drawn at
    random; an item may then be in two tasks, as gold and check tasks' items are)."""
    others = [item for item in pool if item not in chunk]
    return chunk[:size] + rng.sample(others, min(len(others), max(0, size - len(chunk))))


def cycle_pairs(chunk: list) -> list[list]:
    """A chunk's items as a cycle of pairs (each item in two), or the chunk if it is a pair."""
    n = len(chunk)
    return [[chunk[i], chunk[(i + 1) % n]] for i in range(n)] if n > 2 else [chunk]


def agreement_subset(occupation_of: list[int], fraction: float, rng: random.Random) -> set[int]:
    """Indices of ``round(fraction * n)`` tasks, spread over occupations.

    ``occupation_of[i]`` is task i's occupation. Every occupation's first task
    (in a random order) is taken before any occupation's second, so per-occupation
    agreement exists for as many occupations as the fraction allows.
    """
    if not 0 <= fraction <= 1:
        raise ValueError(f"the agreement fraction must be in [0, 1], got {fraction}")
    seen: dict[int, int] = defaultdict(int)
    keys = []
    for i, occupation in enumerate(occupation_of):
        keys.append((seen[occupation], rng.random(), i))
        seen[occupation] += 1
    return {i for *_, i in sorted(keys)[: round(fraction * len(occupation_of))]}


@transaction.atomic
def build_tasks(
    size: int,
    overlap: int,
    seed: int = 0,
    agreement_fraction: float = 0.0,
    agreement_overlap: int = 3,
    study: Study | None = None,
) -> int:
    """Create tasks for every item of the study not yet in one; returns how many were made
    (a pairwise study's: pairs, ``cycle_pairs``).

    ``agreement_fraction`` of them (``agreement_subset``) get ``agreement_overlap``,
    the others ``overlap``.
    """
    if agreement_overlap < 1:
        raise ValueError(f"the agreement overlap must be at least 1, got {agreement_overlap}")
    study = study or studies.default_study()
    rng = random.Random(seed)
    pending = (
        Item.objects.filter(study=study, task_items__isnull=True)
        .select_related("prompt")
        .order_by("prompt__occupation_id", "id")
    )
    by_occupation: dict[int, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for item in pending:
        by_occupation[item.prompt.occupation_id][item.prompt.prompt_type].append(item)
    pairwise = study.question_format == Study.Question.PAIRWISE
    planned: list[tuple[int, list]] = []
    for occupation_id, by_type in by_occupation.items():
        for items in by_type.values():
            rng.shuffle(items)
        chunks = mixed_chunks(dict(sorted(by_type.items())), PAIR_CHUNK if pairwise else size)
        if pairwise:
            chunks = [pair for chunk in chunks for pair in cycle_pairs(chunk)]
        elif study.question_format in FIXED_SIZE:
            pool = [item for items in by_type.values() for item in items]
            chunks = [filled(chunk, pool, size, rng) for chunk in chunks]
        planned += [(occupation_id, c) for c in chunks]
    shared = agreement_subset([o for o, _ in planned], agreement_fraction, rng)
    for i, (occupation_id, chunk) in enumerate(planned):
        task = RankingTask.objects.create(
            study=study,
            occupation_id=occupation_id,
            overlap=agreement_overlap if i in shared else overlap,
        )
        TaskItem.objects.bulk_create(TaskItem(task=task, item=item) for item in chunk)
    return len(planned)


def _sample_chunk(
    study: Study, occupation: Occupation, size: int, rng: random.Random, gold: bool = False
) -> list[Item]:
    """``size`` of the occupation's items in the study, types mixed as ``build_tasks`` does
    (a gold pair: a stereotypical and a diverse one, when there are both)."""
    by_type: dict[str, list] = defaultdict(list)
    items = Item.objects.filter(study=study, prompt__occupation=occupation)
    for item in items.select_related("prompt"):
        by_type[item.prompt.prompt_type].append(item)
    for items in by_type.values():
        items.sort(key=lambda i: i.pk)
        rng.shuffle(items)
    if gold and size == 2 and by_type[PromptType.STEREOTYPICAL] and by_type[PromptType.DIVERSE]:
        return [by_type[PromptType.STEREOTYPICAL][0], by_type[PromptType.DIVERSE][0]]
    chunks = mixed_chunks(dict(sorted(by_type.items())), size)
    if chunks and study.question_format in FIXED_SIZE:
        return filled(chunks[0], [i for items in by_type.values() for i in items], size, rng)
    return chunks[0][:size] if chunks else []


def _missing(study: Study, kind: Q, per_occupation: int) -> list[tuple[Occupation, int]]:
    """The study's occupations (those it has items of) with fewer than ``per_occupation``
    tasks of a kind in it, and how many short."""
    occupations = (
        Occupation.objects.filter(prompts__items__study=study)
        .distinct()
        .annotate(n=Count("tasks", filter=kind & Q(tasks__study=study), distinct=True))
        .order_by("name")
    )
    return [(o, per_occupation - o.n) for o in occupations if o.n < per_occupation]


def _create(study: Study, occupation: Occupation, items: list[Item], **fields) -> RankingTask:
    task = RankingTask.objects.create(study=study, occupation=occupation, **fields)
    TaskItem.objects.bulk_create(TaskItem(task=task, item=item) for item in items)
    return task


@transaction.atomic
def build_gold_tasks(
    per_occupation: int = 1, size: int = 6, seed: int = 0, study: Study | None = None
) -> int:
    """Top every occupation up to ``per_occupation`` gold tasks; returns how many were made.

    A gold task is a mixed chunk of the occupation's items holding at least one
    stereotypical and one diverse prompt; its reference keys every stereotypical
    item before every diverse one (neutral ones are not keyed). Occupations
    without both types get none.
    """
    study = study or studies.default_study()
    rng = random.Random(seed)
    made = 0
    for occupation, short in _missing(study, Q(tasks__is_gold=True), per_occupation):
        for _ in range(short):
            items = _sample_chunk(study, occupation, size, rng, gold=True)
            types = {i.pk: i.prompt.prompt_type for i in items}
            stereo = [i for i, t in types.items() if t == PromptType.STEREOTYPICAL]
            diverse = [i for i, t in types.items() if t == PromptType.DIVERSE]
            if not stereo or not diverse:
                break
            pairs = [[a, b] for a in stereo for b in diverse]
            _create(study, occupation, items, is_gold=True, gold_reference={"pairs": pairs})
            made += 1
    return made


def check_positions(study: Study, size: int) -> list[int]:
    """The places a check card can be asked for in a task of ``size`` cards: any in a
    ranking, the top k in top_k, first or last in best_worst, first (chosen) in a pair."""
    question, k = study.question_format, study.question_k
    if question == Study.Question.TOP_K:
        return list(range(min(k or size, size)))
    if question == Study.Question.BEST_WORST:
        return [0, size - 1]
    if question == Study.Question.PAIRWISE:
        return [0]
    return list(range(size))


@transaction.atomic
def build_check_tasks(
    per_occupation: int = 1, size: int = 6, seed: int = 0, study: Study | None = None
) -> int:
    """Top every occupation up to ``per_occupation`` attention-check tasks; returns how many.

    A check task is an ordinary task (overlap 1) of ``size`` of the occupation's
    items; one of them, drawn at random, is the check card, and the position it
    asks for is drawn at random among those its study's format can ask for
    (``check_positions``).
    """
    study = study or studies.default_study()
    rng = random.Random(seed)
    made = 0
    for occupation, short in _missing(study, Q(tasks__check_item__isnull=False), per_occupation):
        for _ in range(short):
            items = _sample_chunk(study, occupation, size, rng)
            if len(items) < 2:
                break
            card = rng.choice(items)
            position = rng.choice(check_positions(study, len(items)))
            _create(study, occupation, items, check_item=card, check_position=position)
            made += 1
    return made


@transaction.atomic
def build_study_tasks(
    study: Study,
    size: int,
    overlap: int,
    seed: int = 0,
    agreement_fraction: float = 0.0,
    agreement_overlap: int = 3,
) -> dict[str, int]:
    """What ``build_tasks`` makes, in one transaction: the ordinary tasks of the study's
    new items, then every occupation topped up to the study's gold and attention-check
    tasks (none of a kind the study turned off). ``{"tasks", "gold", "checks"}``."""
    made = {"tasks": build_tasks(size, overlap, seed, agreement_fraction, agreement_overlap, study)}
    gold, checks = study.gold_per_occupation, study.checks_per_occupation
    made["gold"] = build_gold_tasks(gold, size, seed, study) if gold else 0
    made["checks"] = build_check_tasks(checks, size, seed, study) if checks else 0
    return made
