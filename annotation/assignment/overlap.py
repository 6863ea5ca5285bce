"""Adaptive overlap, the service: a task whose rankings disagree gets one more annotator.

When a ranking fills the last slot of a task ranked by two or more annotators,
``queue_if_full`` sends ``annotation.tasks.adapt_overlap`` once the submit commits
(through the outbox, ``core.queue.after_commit``: one row written with the submit, so a
broker outage loses no check); the task (default queue) runs ``adapt``:
Kendall's W of the task's rankings that count, and ``overlap + 1`` when W is below
``STEREORANK["ADAPTIVE_OVERLAP"]["CUT"]`` and the overlap below its ``CAP``
(``annotation.stats.overlap``). The task opens again, as part of the agreement
subset, so the agreement pacing brings it a ranking soon.
"""

from __future__ import annotations

from django.conf import settings
from django.db.models import F

from annotation.models import RankingTask
from annotation.rankings.selectors import counted_rankings
from annotation.stats.tiers import of_ranking, without
from core.queue import after_commit

TASK = "annotation.tasks.adapt_overlap"


def queue_if_full(task: RankingTask, rankings: int) -> None:
    """Inside the submit's transaction: ``task`` now holds ``rankings``; when that fills
    a task of overlap 2 or more below the cap, check it once this commits."""
    cap = settings.STEREORANK["ADAPTIVE_OVERLAP"]["CAP"]
    if task.is_gold or task.overlap < 2 or rankings != task.overlap or task.overlap >= cap:
        return
    after_commit(TASK, task.pk)


def adapt(task_id: int) -> bool:
    """Raise the task's overlap by one if its rankings disagree (see the module); True
    when raised. Idempotent: a task already raised, or ranked again meanwhile, is left."""
    from annotation.stats.overlap import one_more, task_agreement  # scipy: in the worker only

    task = RankingTask.objects.filter(pk=task_id).first()
    if task is None:
        return False
    card = task.check_item_id
    orders = [
        [list(t) for t in without(of_ranking(order, tiers), card)]
        for order, tiers in counted_rankings(include_synthetic=True)
        .filter(task_id=task_id)
        .values_list("order", "tiers")
    ]
    knobs = settings.STEREORANK["ADAPTIVE_OVERLAP"]
    full = task.ranking_count == task.overlap
    if not one_more(
        task_agreement(orders), task.overlap, full=full, cut=knobs["CUT"], cap=knobs["CAP"]
    ):
        return False
    raised = RankingTask.objects.filter(
        pk=task_id, overlap=task.overlap, ranking_count=task.ranking_count
    ).update(overlap=F("overlap") + 1)
    return bool(raised)
