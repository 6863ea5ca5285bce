"""A validation study's tasks: one occupation's images from both conditions in equal
numbers, blinded, built from the images imported (or placeholders) for its conditions.

Each task holds K images (the study's task size, K even) of one occupation: K/2
from the baseline and K/2 from the treatment, drawn at random (seeded) from the
images not yet in a task of the study, so every image is ranked in one task. The
assignment shuffles the cards for each annotator and records the order shown
(``Assignment.shown_order``, kept on the ranking). Cards show no prompt and no
condition (``RankingTask.card_text = none``) unless the study shows prompts
(``Study.shows_prompts``: each card then shows its condition's text). Attention-
check tasks are such tasks with one card made the check (as ``tasks_builder``
makes them); gold tasks are made by staff in the admin, as in any study. Check and
gold tasks never enter the report (``validation_results``).
"""

from __future__ import annotations

import random
from collections import defaultdict

from django.db import transaction

from . import studies
from .errors import ConditionError
from .models import RankingTask, Study, TaskItem
from .validation_models import Condition, ConditionImage

# Rankings per validation task when the study sets no overlap: the card's 20 annotators,
# every one ranking every task (the tests compare each annotator's two conditions).
VALIDATION_OVERLAP = 20


def _free_images(study: Study) -> dict[int, dict[str, list[int]]]:
    """``{occupation id: {role: [item ids]}}`` of the study's images in no task yet."""
    rows = (
        ConditionImage.objects.filter(prompt__condition__study=study, item__task_items__isnull=True)
        .values_list("item_id", "prompt__prompt__occupation_id", "prompt__condition__role")
        .order_by("item_id")
    )
    out: dict[int, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for item, occupation, role in rows:
        out[occupation][role].append(item)
    return out


def task_size(study: Study) -> int:
    """The study's K, checked even (K/2 images of each condition)."""
    k = studies.task_size(study)
    if k % 2:
        raise ConditionError(
            f"study {study.slug}: task size {k} is odd; a validation task shows the two "
            "conditions in equal numbers"
        )
    return k


@transaction.atomic
def build_validation_tasks(study: Study, *, seed: int = 0, checks_per_occupation: int = 0) -> int:
    """Tasks for the study's images not yet in one; returns how many tasks were made.

    ``checks_per_occupation``: of each occupation's new tasks, that many (at most) get an
    attention-check card at a random position.
    """
    if study.kind != Study.Kind.VALIDATION:
        raise ConditionError(f"study {study.slug} is a {study.kind} study, not a validation one")
    roles = set(study.conditions.values_list("role", flat=True))
    if roles != set(Condition.Role.values):
        raise ConditionError(f"study {study.slug} needs a baseline and a treatment condition")
    k, overlap = task_size(study), study.overlap or VALIDATION_OVERLAP
    card_text = RankingTask.CardText.CONDITION if study.shows_prompts else RankingTask.CardText.NONE
    rng = random.Random(seed)
    made = 0
    for occupation, by_role in sorted(_free_images(study).items()):
        base, treat = by_role[Condition.Role.BASELINE], by_role[Condition.Role.TREATMENT]
        rng.shuffle(base)
        rng.shuffle(treat)
        half = k // 2
        for n in range(min(len(base), len(treat)) // half):
            items = base[n * half : (n + 1) * half] + treat[n * half : (n + 1) * half]
            check = {}
            if n < checks_per_occupation:
                check = {"check_item_id": rng.choice(items), "check_position": rng.randrange(k)}
            task = RankingTask.objects.create(
                study=study,
                occupation_id=occupation,
                overlap=overlap,
                card_text=card_text,
                **check,
            )
            TaskItem.objects.bulk_create(TaskItem(task=task, item_id=i) for i in items)
            made += 1
    return made
