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
makes them; ``build_validation_checks`` adds such tasks beside the ordinary ones,
as ``build_check_tasks`` does). Gold tasks (``build_validation_gold``) cannot come
from the conditions (whether the optimiser helped is what the study asks), so, as a
collection study's gold comes from the catalogue's clearest contrast, each occupation's
gold task shows
K/2 images of its catalogue prompts written to be stereotypical and K/2 of those
written to be diverse (placeholder cards, items of the study outside every
condition), keyed every stereotypical before every diverse one, and is blinded as
the others. Check and gold tasks never enter the report (``validation_results``);
the quality policy uses them as in any study.
"""

from __future__ import annotations

import hashlib
import random
from collections import defaultdict

from django.core.files.base import ContentFile
from django.db import transaction

from annotation.catalogue.placeholders import placeholder_png
from annotation.errors import ConditionError
from annotation.models import Item, Prompt, PromptType, RankingTask, Study, TaskItem
from annotation.models.validation import Condition, ConditionImage
from annotation.studies import lifecycle as studies

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
def build_validation_tasks(study: Study, *, seed: int = 0) -> int:
    """Tasks for the study's images not yet in one; returns how many tasks were made."""
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
            task = RankingTask.objects.create(
                study=study, occupation_id=occupation, overlap=overlap, card_text=card_text
            )
            TaskItem.objects.bulk_create(TaskItem(task=task, item_id=i) for i in items)
            made += 1
    return made


def _task_occupations(study: Study) -> list[int]:
    """The occupations of the study's ordinary tasks (those the report reads)."""
    ordinary = RankingTask.objects.filter(study=study, is_gold=False, check_item__isnull=True)
    return sorted(set(ordinary.values_list("occupation_id", flat=True)))


@transaction.atomic
def build_validation_checks(study: Study, *, per_occupation: int = 1, seed: int = 0) -> int:
    """Top each occupation of the study's tasks up to ``per_occupation`` attention-check
    tasks; returns how many were made. As ``tasks_builder.build_check_tasks`` does, a
    check task reuses images already in an ordinary task (K/2 of each condition), one of
    them the check card at a random position; the report leaves it out, so the ordinary
    tasks keep all their rankings for it."""
    rng = random.Random(seed)
    made = 0
    for occupation in _task_occupations(study):
        tasks = RankingTask.objects.filter(study=study, occupation_id=occupation)
        have = tasks.filter(check_item__isnull=False).count()
        ordinary = list(tasks.filter(is_gold=False, check_item__isnull=True).order_by("pk"))
        for _ in range(have, per_occupation):
            source = rng.choice(ordinary)
            items = sorted(source.task_items.values_list("item_id", flat=True))
            task = RankingTask.objects.create(
                study=study,
                occupation_id=occupation,
                overlap=source.overlap,
                card_text=source.card_text,
                check_item_id=rng.choice(items),
                check_position=rng.randrange(len(items)),
            )
            TaskItem.objects.bulk_create(TaskItem(task=task, item_id=i) for i in items)
            made += 1
    return made


def _gold_item(study: Study, prompt: Prompt, seed: int) -> Item:
    """The study's placeholder card of a catalogue prompt (made once per prompt and seed)."""
    png = placeholder_png(
        prompt.text, prompt.prompt_type, seed, f"study {study.slug}, gold {prompt.pk}-{seed}"
    )
    sha = hashlib.sha256(png).hexdigest()
    item = Item.objects.filter(study=study, image_sha256=sha).first()
    if item is None:
        item = Item(study=study, prompt=prompt, image_sha256=sha, is_placeholder=True)
        item.generator = {"name": "placeholder", "placeholder": True, "gold": True}
        item.image.save(f"{sha[:20]}.png", ContentFile(png), save=False)
        item.save()
    return item


@transaction.atomic
def build_validation_gold(study: Study, *, per_occupation: int = 1, seed: int = 0) -> int:
    """Top each of the study's occupations up to ``per_occupation`` gold tasks (see the
    module); returns how many were made. Occupations whose catalogue has no stereotypical
    or no diverse prompt get none."""
    if study.kind != Study.Kind.VALIDATION:
        raise ConditionError(f"study {study.slug} is a {study.kind} study, not a validation one")
    k, overlap = task_size(study), study.overlap or VALIDATION_OVERLAP
    card_text = RankingTask.CardText.CONDITION if study.shows_prompts else RankingTask.CardText.NONE
    rng = random.Random(seed)
    occupations = _task_occupations(study)
    made = 0
    for occupation in occupations:
        have = RankingTask.objects.filter(study=study, occupation_id=occupation, is_gold=True)
        for n in range(have.count(), per_occupation):
            chosen = []
            for kind in (PromptType.STEREOTYPICAL, PromptType.DIVERSE):
                prompts = list(
                    Prompt.objects.filter(
                        occupation_id=occupation, prompt_type=kind, origin__isnull=True
                    ).order_by("pk")
                )
                if not prompts:
                    break
                rng.shuffle(prompts)
                chosen.append(
                    [_gold_item(study, prompts[i % len(prompts)], n * k + i) for i in range(k // 2)]
                )
            if len(chosen) < 2 or len({i.pk for group in chosen for i in group}) < k:
                break
            stereo, diverse = chosen
            task = RankingTask.objects.create(
                study=study,
                occupation_id=occupation,
                overlap=overlap,
                card_text=card_text,
                is_gold=True,
                gold_reference={"pairs": [[a.pk, b.pk] for a in stereo for b in diverse]},
            )
            TaskItem.objects.bulk_create(TaskItem(task=task, item=i) for i in stereo + diverse)
            made += 1
    return made


@transaction.atomic
def build_study_tasks(
    study: Study, *, seed: int = 0, checks: int | None = None, gold: int | None = None
) -> dict:
    """The blinded tasks of the images not yet in one, then each occupation topped up to
    ``checks`` attention-check and ``gold`` gold tasks, as ``build_tasks`` gives a
    collection study (by default the study's own counts, 1 and 1 unless its owner turned
    them off, so the quality policy sees every annotator on both); run again after more
    images arrive, it adds only what is missing."""
    checks = study.checks_per_occupation if checks is None else checks
    gold = study.gold_per_occupation if gold is None else gold
    made = build_validation_tasks(study, seed=seed)
    made += build_validation_checks(study, per_occupation=checks, seed=seed)
    return {"tasks": made, "gold": build_validation_gold(study, per_occupation=gold, seed=seed)}
