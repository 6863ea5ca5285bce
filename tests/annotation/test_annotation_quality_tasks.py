"""Quality tasks in the database: the agreement subset, gold tasks, attention checks."""

import io
import random
from collections import Counter

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.db import IntegrityError, transaction

from annotation.models import Item, PromptType, RankingTask, TaskItem, check_instruction
from annotation.studies.tasks_builder import agreement_subset, build_check_tasks, build_gold_tasks

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=out)
    return out.getvalue()


@pytest.fixture
def catalogue(media_root):
    """40 occupations x 3 prompt types x 2 placeholder images = 240 items."""
    run("load_catalogue", "--placeholder-images", "2")


# --- the agreement subset ------------------------------------------------------


def test_agreement_subset_takes_each_occupations_first_task_before_any_second():
    occupations = [o for o in range(10) for _ in range(3)]  # 10 occupations x 3 tasks
    chosen = agreement_subset(occupations, 0.2, random.Random(1))
    assert len(chosen) == 6
    assert len({occupations[i] for i in chosen}) == 6  # six different occupations
    chosen = agreement_subset(occupations, 0.5, random.Random(1))
    per = Counter(occupations[i] for i in chosen)
    assert len(chosen) == 15 and sorted(per.values()) == [1] * 5 + [2] * 5
    assert agreement_subset(occupations, 0.0, random.Random(1)) == set()
    assert agreement_subset(occupations, 1.0, random.Random(1)) == set(range(30))
    with pytest.raises(ValueError, match="agreement fraction"):
        agreement_subset(occupations, 1.5, random.Random(1))


def test_build_tasks_command_gives_the_settings_subset_its_overlap(catalogue, settings):
    settings.STEREORANK = {**settings.STEREORANK, "AGREEMENT_FRACTION": 0.2}
    run("build_tasks", "--size", "4", "--overlap", "1", "--agreement-overlap", "3")
    tasks = list(RankingTask.objects.filter(is_gold=False, check_item__isnull=True))
    assert len(tasks) == 80  # 6 items per occupation -> tasks of 4 and 2
    # and, on by default, a gold and an attention-check task per occupation beside them
    assert RankingTask.objects.filter(is_gold=True).count() == 40
    assert RankingTask.objects.filter(check_item__isnull=False).count() == 40
    shared = [t for t in tasks if t.overlap == 3]
    assert len(shared) == 16  # round(0.2 * 80)
    assert len({t.occupation_id for t in shared}) == 16  # spread over occupations
    assert all(t.overlap == 1 for t in tasks if t not in shared)


def test_build_tasks_command_refuses_a_fraction_out_of_range(catalogue):
    from django.core.management import CommandError

    with pytest.raises(CommandError, match="agreement-fraction"):
        run("build_tasks", "--agreement-fraction", "1.2")
    assert not RankingTask.objects.exists()


# --- gold tasks ------------------------------------------------------------------


def test_gold_tasks_key_every_stereotypical_item_before_every_diverse_one(catalogue):
    run("build_tasks", "--size", "6", "--agreement-fraction", "0")  # 1 gold each by default
    before = RankingTask.objects.count()
    assert RankingTask.objects.filter(is_gold=True).count() == 40
    assert build_gold_tasks(per_occupation=2, size=6, seed=4) == 40
    assert build_gold_tasks(per_occupation=2, size=6, seed=4) == 0  # topped up already
    gold = RankingTask.objects.filter(is_gold=True).prefetch_related("items__prompt")
    assert gold.count() == 80 and RankingTask.objects.count() == before + 40
    for task in gold:
        items = list(task.items.all())
        assert len(items) == 6  # as large as an ordinary task
        assert {i.prompt.occupation_id for i in items} == {task.occupation_id}
        kind = {i.pk: i.prompt.prompt_type for i in items}
        expected = {
            (a, b)
            for a in kind
            for b in kind
            if kind[a] == PromptType.STEREOTYPICAL and kind[b] == PromptType.DIVERSE
        }
        assert expected and set(task.reference().pairs) == expected
        task.full_clean()


def test_gold_tasks_need_both_contrasting_types(media_root):
    run("load_catalogue", "--placeholder-images", "1")
    Item.objects.filter(prompt__prompt_type=PromptType.DIVERSE).delete()
    assert build_gold_tasks(per_occupation=1) == 0


# --- attention checks --------------------------------------------------------------


def test_check_tasks_hold_one_of_their_cards_at_an_instructed_position(catalogue):
    assert run("build_tasks", "--size", "6", "--checks-per-occupation", "1", "--seed", "2")
    checks = RankingTask.objects.filter(check_item__isnull=False)
    assert checks.count() == 40
    positions = Counter()
    for task in checks:
        ids = set(task.items.values_list("id", flat=True))
        assert len(ids) == 6 and task.check_item_id in ids and task.overlap == 1
        assert 0 <= task.check_position < 6 and not task.is_gold
        positions[task.check_position] += 1
        task.full_clean()
    assert len(positions) > 1  # the instructed position is drawn, not fixed
    assert build_check_tasks(per_occupation=1) == 0


def test_check_instruction_says_plainly_where_to_put_the_card():
    text = check_instruction(0)
    assert "attention check" in text and "position 1" in text
    assert "position 4" in check_instruction(3)


# --- the model's invariants ---------------------------------------------------------


def _task(make_tasks, **fields):
    (task,) = make_tasks(1, k=3)
    ids = list(task.items.order_by("id").values_list("id", flat=True))
    for name, value in fields.items():
        setattr(task, name, value(ids) if callable(value) else value)
    return task, ids


@pytest.mark.parametrize(
    "fields, error",
    [
        ({"is_gold": True, "gold_reference": {"order": []}}, "gold_reference"),
        ({"is_gold": True, "gold_reference": {"pairs": [[1]]}}, "gold_reference"),
        ({"is_gold": True, "gold_reference": {"order": [1, 2], "pairs": []}}, "gold_reference"),
        ({"is_gold": True, "gold_reference": lambda ids: {"pairs": [ids[:2], ids[1::-1]]}}, "gold"),
        ({"is_gold": True, "gold_reference": {"order": [10**9, 10**9 + 1]}}, "gold_reference"),
        ({"gold_reference": lambda ids: {"order": ids}}, "gold_reference"),
        ({"check_item_id": lambda ids: ids[0]}, "check_position"),
        ({"check_item_id": lambda ids: ids[0], "check_position": 3}, "check_position"),
    ],
)
def test_clean_refuses_malformed_gold_and_checks(make_tasks, fields, error):
    task, _ = _task(make_tasks, **fields)
    with pytest.raises(ValidationError) as caught:
        task.full_clean()
    assert error.split("_")[0] in " ".join(caught.value.message_dict)


def test_clean_accepts_a_full_order_and_a_check_in_range(make_tasks):
    task, ids = _task(make_tasks, is_gold=True, gold_reference=lambda ids: {"order": ids})
    task.full_clean()
    assert len(task.reference().pairs) == 3
    task, ids = _task(make_tasks, check_item_id=lambda ids: ids[2], check_position=2)
    task.full_clean()


def test_the_database_refuses_half_made_gold_tasks_and_checks(make_tasks):
    (task,) = make_tasks(1, k=3)
    item = task.items.first()
    for fields in ({"is_gold": True}, {"check_item": item}, {"check_position": 1}):
        with pytest.raises(IntegrityError), transaction.atomic():
            RankingTask.objects.filter(pk=task.pk).update(**fields)
    with pytest.raises(IntegrityError), transaction.atomic():
        RankingTask.objects.filter(pk=task.pk).update(ranking_count=5)  # over its overlap
    # A gold task ignores overlap.
    RankingTask.objects.filter(pk=task.pk).update(
        is_gold=True, gold_reference={"order": [item.pk]}, ranking_count=5
    )
    assert TaskItem.objects.filter(task=task).count() == 3


def test_system_check_reports_bad_quality_settings(settings):
    from annotation.quality.checks import quality_settings

    assert quality_settings(None) == []
    settings.STEREORANK = {
        **settings.STEREORANK,
        "GOLD_RATE": 1.0,
        "GROUP_K": 0,
        "QUALITY_POLICY": {"untouched_max_rate": 2},
        "LABEL_WEIGHTING": "votes",
        "RELIABILITY_MIN_TASKS": 0,
    }
    messages = [e.msg for e in quality_settings(None)]
    assert len(messages) == 6  # GOLD_RATE twice: out of range, and the paced rates' sum
    assert "STEREORANK['LABEL_WEIGHTING'] must be 'none' or 'reliability', not 'votes'" in messages
    assert "STEREORANK['RELIABILITY_MIN_TASKS'] must be at least 1" in messages
    assert any("GOLD_RATE" in m for m in messages) and any("GROUP_K" in m for m in messages)
    assert any("untouched_max_rate must be in [0, 1]" in m for m in messages)
