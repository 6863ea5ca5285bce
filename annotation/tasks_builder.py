"""Build ranking tasks from items: one occupation per task, prompt types mixed."""

import random
from collections import defaultdict
from itertools import zip_longest

from django.db import transaction

from .models import Item, RankingTask, TaskItem


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


@transaction.atomic
def build_tasks(size: int, overlap: int, seed: int = 0) -> int:
    """Create tasks for every item not yet in one; returns the number of tasks made."""
    rng = random.Random(seed)
    pending = (
        Item.objects.filter(task_items__isnull=True)
        .select_related("prompt")
        .order_by("prompt__occupation_id", "id")
    )
    by_occupation: dict[int, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for item in pending:
        by_occupation[item.prompt.occupation_id][item.prompt.prompt_type].append(item)
    made = 0
    for occupation_id, by_type in by_occupation.items():
        for items in by_type.values():
            rng.shuffle(items)
        for chunk in mixed_chunks(dict(sorted(by_type.items())), size):
            task = RankingTask.objects.create(occupation_id=occupation_id, overlap=overlap)
            TaskItem.objects.bulk_create(TaskItem(task=task, item=item) for item in chunk)
            made += 1
    return made
