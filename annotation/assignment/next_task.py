"""Assignment: the one place that decides which task an annotator ranks next.

``next_task`` resumes the annotator's live reservation or reserves a new task of the
annotator's study (an open one, or a closed one that its participants may finish;
a draft or archived study serves nothing new).
The choice serves quality: gold tasks are mixed into each stream at ``GOLD_RATE``,
attention-check tasks at ``CHECK_RATE`` and rankings of the agreement subset (the
tasks ranked by several annotators, those already started first) at
``AGREEMENT_RATE``, each paced per annotator (``is_due``), so a study stopped
early still measures agreement and catches careless annotators whatever the
ordering; excluded annotators get nothing, and a newcomer takes their seats in the
group quotas first (``annotation.assignment.quotas``).

Among the open tasks, the order is an *ordering*: a function in ``ORDERINGS``
that turns the annotator's rankings into sort keys over candidate tasks, read
from the database (today's ``uniform``: the occupation they have seen least, then
the task with the fewest rankings; ``active``: the stored priority per task,
written by the training side's sampler, then ``uniform``). This module never
computes a priority, so annotation never imports torch.

Race-free: the best candidate is locked in the query that finds it (on
PostgreSQL ``SELECT ... FOR UPDATE SKIP LOCKED``, so two annotators never take
the one remaining slot); SQLite serialises writers (``transaction_mode=IMMEDIATE``).

Its cost follows the open tasks, not the finished ones: the candidates are read
from the ``open_task`` partial index (``RankingTask``: not gold, fewer rankings than
overlap), kept by the ``ranking_count`` that submit updates in its transaction. On
PostgreSQL what an open task is checked against is read once per query: the annotator's
ranked tasks (a hashed ``NOT IN``), their occupations and the live reservations' tasks
(InitPlans), whatever the statistics the generic plan was made on (a fresh table's).

Past 400 lines because choosing a task is one decision: the state it reads, the
orderings, the pacing, the candidates and the waits for locked rows are read together.
"""

import math
import random
from collections.abc import Callable, Sequence

from django.conf import settings
from django.contrib.postgres.expressions import ArraySubquery
from django.db import connection, transaction
from django.db.models import (
    BooleanField,
    Count,
    DateTimeField,
    ExpressionWrapper,
    F,
    Func,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
)
from django.db.models.expressions import BaseExpression, OrderBy
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.translation import gettext

from annotation.assignment import quotas
from annotation.assignment.selectors import live_reservations
from annotation.errors import AnnotatorExcluded, ConsentRequired
from annotation.models import (
    AnnotatorProfile,
    AnnotatorStatus,
    Assignment,
    Item,
    Occupation,
    Prompt,
    Ranking,
    RankingTask,
    Study,
)
from annotation.rankings.selectors import consents_to_current_text, excluded_message
from core.prepared import Param, Prepared, columns, instance, server_binding

SortKey = str | BaseExpression
Ordering = Callable[[QuerySet[Ranking]], Sequence[SortKey]]
"""Sort keys over candidate ``RankingTask`` rows (first is most wanted), given the
annotator's rankings; a key may refer to the candidate through ``OuterRef``."""


def _count(rankings: QuerySet[Ranking]) -> Subquery:
    """``rankings`` (filtered on ``OuterRef``s) counted, as a subquery."""
    return Subquery(
        rankings.order_by().values("annotator").annotate(n=Count("pk")).values("n"),
        output_field=IntegerField(),
    )


def uniform(mine: QuerySet[Ranking]) -> list[SortKey]:
    """The occupation the annotator has seen least first, then the task with the fewest
    rankings (furthest from its overlap).

    On PostgreSQL the occupations of the annotator's rankings are read once per query
    (an uncorrelated ``ARRAY(...)``) and counted per open task with ``array_positions``;
    elsewhere a correlated count, which runs once per open task.
    """
    if connection.vendor == "postgresql":
        seen_occupations = ArraySubquery(mine.order_by().values("task__occupation"))
        positions = Func(seen_occupations, F("occupation"), function="array_positions")
        seen = Func(positions, function="cardinality", output_field=IntegerField())
    else:
        seen = Coalesce(_count(mine.filter(task__occupation=OuterRef("occupation"))), 0)
    return [seen.asc(), "ranking_count"]


def active(mine: QuerySet[Ranking]) -> list[SortKey]:
    """The highest ``RankingTask.priority`` first, ties (unscored tasks: 0) in the
    ``uniform`` order.

    The training side's sampler (``training.registry.sampling``) writes the priorities for an
    ``active`` study: a greedy D-optimal batch in which a share of picks (20% by
    default) explores the occupations with the fewest rankings. So the exploration
    is in the data, not here: the request reads one indexed column more than
    ``uniform`` and no model code.
    """
    return [F("priority").desc(), *uniform(mine)]


ORDERINGS: dict[str, Ordering] = {"uniform": uniform, "active": active}
"""The orderings assignment may use, by name."""


def pacing_phase(username: str, kind: str = "gold") -> float:
    """The annotator's fixed random start in [0, 1) for ``is_due``, one per paced
    ``kind`` (``PACED``); drawn from the username, not an id the database hands out, so
    a simulated study is the same whatever its ids."""
    return random.Random(f"{kind}-phase:{username}").random()


def is_due(done: int, kind_done: int, rate: float, phase: float) -> bool:
    """Whether the next task should be of a paced kind (a gold one, say): systematic
    sampling with a random start.

    After ``n`` tasks an annotator should have met ``floor(rate * n + phase)`` tasks
    of the kind; the next is one when ``kind_done`` is short of that at
    ``n = done + 1``. So the share is ``rate`` in the long run, and where they fall
    differs between annotators (``phase``), so no fixed slot gives them away.
    """
    return kind_done < math.floor(rate * (done + 1) + phase)


PACED = ("gold", "check", "agreement")
"""The task kinds paced into every stream, most wanted first when two are due."""
_RATES = {"gold": "GOLD_RATE", "check": "CHECK_RATE", "agreement": "AGREEMENT_RATE"}
AGREEMENT_SUBSET = Q(task__overlap__gt=1, task__is_gold=False)
"""A ranking of the agreement subset: a task that several annotators rank."""


def due(state: dict) -> str | None:
    """The paced kind the next task should be (``PACED`` order), or None."""
    done = state["done"] or 0
    for kind in PACED:
        rate = settings.STEREORANK[_RATES[kind]]
        phase = pacing_phase(state["user__username"], kind)
        if is_due(done, state[f"{kind}_done"] or 0, rate, phase):
            return kind
    return None


PROFILE = Param("profile", IntegerField())
STUDY = Param("study", IntegerField())
NOW = Param("now", DateTimeField())
SERVING = (Study.Status.OPEN, Study.Status.CLOSED)
"""The statuses in which a study serves tasks (a closed one to those who started)."""


def _state_query() -> QuerySet:
    """The annotator's state for ``next_task``, one row (compiled once: ``_STATE``)."""
    mine = Ranking.objects.filter(annotator=OuterRef("pk"))
    return (
        AnnotatorProfile.objects.filter(pk=PROFILE)
        .annotate(
            consented=consents_to_current_text(OuterRef("pk")),
            done=_count(mine),
            gold_done=_count(mine.filter(task__is_gold=True)),
            check_done=_count(mine.filter(task__check_item__isnull=False)),
            agreement_done=_count(mine.filter(AGREEMENT_SUBSET)),
            current=Subquery(
                Assignment.objects.filter(annotator=OuterRef("pk"), reserved_until__gt=NOW)
                .order_by("-reserved_until")
                .values("pk")[:1]
            ),
            seated=quotas.has_seat(OuterRef("pk")),
            quotas_set=quotas.any_quota(OuterRef("study_id")),
            study_status=F("study__status"),
        )
        .values(
            "consented",
            "done",
            *(f"{kind}_done" for kind in PACED),
            "current",
            "status",
            "seated",
            "quotas_set",
            "user__username",
            "study__sampler",
            "study_status",
        )
    )


_STATE = Prepared(_state_query)


def _items_query() -> QuerySet:
    """A task's items with their prompts (compiled once: ``_ITEMS``)."""
    return Item.objects.filter(task_items__task=Param("task", IntegerField())).values(
        *columns(Item), *columns(Prompt, "prompt__")
    )


_ITEMS = Prepared(_items_query)


def _task_items(task: RankingTask) -> list[Item]:
    """``task``'s items, each with its prompt."""
    items = []
    for row in _ITEMS.rows(task=task.pk):
        item = instance(Item, row)
        item.prompt = instance(Prompt, row, "prompt__")
        items.append(item)
    return items


def next_task(profile: AnnotatorProfile, ordering: str | None = None) -> Assignment | None:
    """The annotator's reserved task (resume), or reserve a new one, the open tasks in
    ``ordering`` (a name in ``ORDERINGS``; by default their study's ``sampler``); None if
    none left.

    A fixed number of queries whatever K and the number of tasks: the annotator's
    state, the best candidate (locked), its live reservations, its items and one
    upsert of the reservation; for a newcomer, up to four more that seat them in
    their groups' quotas (``annotation.assignment.quotas``; ``GroupFull`` when one is full).
    Finding none, on PostgreSQL it lets go of every lock, waits for the open tasks other
    transactions hold and chooses again, in a transaction of its own.
    ``AnnotatorExcluded`` for an excluded annotator.
    """
    if ordering is not None:
        ORDERINGS[ordering]  # an unknown name fails before anything is read
    now = timezone.now()
    (state,) = _STATE.rows(profile=profile.pk, now=now)
    ordering = ordering or state["study__sampler"]
    if not state["consented"]:
        raise ConsentRequired(gettext("Give consent before ranking."))
    if state["status"] == AnnotatorStatus.EXCLUDED:
        raise AnnotatorExcluded(excluded_message(profile))
    if state["current"] is not None:
        return Assignment.objects.select_related("task__occupation").get(pk=state["current"])
    done = state["done"] or 0
    if done >= profile.quota or state["study_status"] not in SERVING:
        return None
    paced = due(state)
    may_wait = connection.features.has_select_for_update_skip_locked
    with transaction.atomic():
        reserved = _reserve(profile, state, now, ordering, paced, wait_if_none=may_wait)
    if reserved is _WAIT:
        # Rows skipped as locked (a priority write) are not "none left": wait for them holding
        # nothing (a row that failed its recheck stays locked till the transaction ends, and
        # two waiters each holding one deadlocked), then choose again.
        with transaction.atomic():
            _wait_for_locked(profile, now, ordering, paced)
            reserved = _reserve(profile, state, now, ordering, paced)
    return reserved


_WAIT = Assignment()
"""``_reserve``'s answer when it found no task and rolled back: wait, then try again."""


def _reserve(
    profile, state: dict, now, ordering: str, paced: str | None, wait_if_none: bool = False
) -> Assignment | None:
    """Inside the caller's transaction: seat a newcomer, lock the best task and upsert the
    reservation. None if no task is left; ``_WAIT`` instead when ``wait_if_none`` (the
    transaction marked for rollback, so every lock it took is let go)."""
    if state["quotas_set"] and not state["done"] and not state["seated"]:
        quotas.take_seats(profile, now)  # balanced pools: GroupFull if a group is full
    task = _take_task(profile, now, ordering, paced)
    if task is None:
        if wait_if_none:
            transaction.set_rollback(True)
            return _WAIT
        return None
    items = _task_items(task)
    random.shuffle(items)
    with server_binding():  # the upsert prepared: planned once per connection
        (assignment,) = Assignment.objects.bulk_create(
            [
                Assignment(
                    task=task,
                    annotator=profile,
                    shown_order=[item.pk for item in items],
                    reserved_until=now + settings.STEREORANK["RESERVATION"],
                )
            ],
            update_conflicts=True,
            unique_fields=["task", "annotator"],
            update_fields=["shown_order", "reserved_at", "reserved_until"],
        )
    assignment.task = task
    assignment.shown_items = items
    return assignment


def _live_count(now) -> BaseExpression:
    """Per candidate task: how many reservations still hold a slot in it. On PostgreSQL the
    live reservations' tasks (one per annotator ranking now) are read once per query (an
    ``ARRAY(...)`` InitPlan) and counted per task with ``array_positions``; nothing is
    stored, so a reservation stops counting the moment it expires. Elsewhere correlated."""
    live = live_reservations(now)
    if connection.vendor == "postgresql":
        tasks = ArraySubquery(live.order_by().values("task"))
        positions = Func(tasks, F("pk"), function="array_positions")
        return Func(positions, function="cardinality", output_field=IntegerField())
    counted = live.filter(task=OuterRef("pk")).order_by().values("task").annotate(n=Count("pk"))
    return Coalesce(Subquery(counted.values("n"), output_field=IntegerField()), 0)


def _flag(condition: Q) -> OrderBy:
    """Tasks meeting ``condition`` first."""
    return ExpressionWrapper(condition, output_field=BooleanField()).desc()


PACED_FIRST: dict[str | None, list[SortKey]] = {
    None: [],
    "gold": ["-is_gold"],
    "check": [_flag(Q(check_item__isnull=False))],
    # The sets already started first: agreement over whole sets from the first rankings.
    "agreement": [_flag(Q(overlap__gt=1)), F("ranking_count").desc()],
}
"""Sort keys put before the ordering's when a paced kind is due."""


OPEN_TO_ALL = {"gold": Q(is_gold=True), "check": Q(check_item__isnull=False)}
"""The paced kinds whose tasks ignore overlap when due: every annotator may rank a gold or
an attention-check task, so a stream meets them at their rate however many annotators
come (a check task's other cards count like any other ranking's; its card never does)."""


def _candidates(
    profile, study, now, ordering: str, paced: str | None, skip_locked: bool = True
) -> QuerySet[RankingTask]:
    """Open tasks of ``study`` (the profile's) that ``profile`` has not ranked, best first
    (see ``_take_task``), locked (rows other transactions hold skipped, unless
    ``skip_locked`` is false)."""
    mine = Ranking.objects.filter(annotator=profile)
    open_slot = Q(
        is_gold=False,
        ranking_count__lt=F("overlap"),
        live__lt=F("overlap") - F("ranking_count"),
    )
    candidates = (
        RankingTask.objects.filter(study=study)
        # NOT IN: PostgreSQL hashes the annotator's tasks once (a hashed SubPlan)
        .exclude(pk__in=mine.order_by().values("task"))
        .annotate(live=_live_count(now))
        .filter(open_slot | OPEN_TO_ALL[paced] if paced in OPEN_TO_ALL else open_slot)
        .order_by(*PACED_FIRST[paced], *ORDERINGS[ordering](mine), "live", "id")
    )
    if connection.features.has_select_for_update_skip_locked:
        candidates = candidates.select_for_update(skip_locked=skip_locked, of=("self",))
    return candidates


def _best_query(ordering: str, paced: str | None) -> Callable[[], QuerySet]:
    def build() -> QuerySet:
        best = _candidates(PROFILE, STUDY, NOW, ordering, paced).select_related("occupation")
        # "live" selected: ORDER BY names it instead of counting the reservations again.
        fields = (*columns(RankingTask), *columns(Occupation, "occupation__"), "live")
        return best.values(*fields)[:1]

    return build


_BEST: dict[tuple[str, Ordering, str | None], Prepared] = {}


def _best(profile: AnnotatorProfile, now, ordering: str, paced: str | None) -> RankingTask | None:
    """The best candidate, locked (the query compiled once per ordering and paced kind)."""
    key = (ordering, ORDERINGS[ordering], paced)  # a name registered again compiles again
    if key not in _BEST:
        _BEST[key] = Prepared(_best_query(ordering, paced))
    row = _BEST[key].first(profile=profile.pk, study=profile.study_id, now=now)
    if row is None:
        return None
    task = instance(RankingTask, row)
    task.occupation = instance(Occupation, row, "occupation__")
    return task


def _live_query() -> QuerySet:
    return live_reservations(NOW).filter(task=Param("task", IntegerField())).values("pk")


_LIVE = Prepared(_live_query)


def _wait_for_locked(profile: AnnotatorProfile, now, ordering: str, paced: str | None) -> None:
    """Wait for an open task another transaction holds, keeping no lock (a savepoint rolled
    back) and in id order: called first in its transaction, a waiter holds nothing another
    waits for."""
    waiting = _candidates(profile, profile.study_id, now, ordering, paced, skip_locked=False)
    with transaction.atomic():
        waiting.order_by("pk").values("pk").first()
        transaction.set_rollback(True)


def _take_task(
    profile: AnnotatorProfile, now, ordering: str, paced: str | None = None, tries: int = 20
) -> RankingTask | None:
    """Lock the best task this annotator has not ranked: a task of the ``paced`` kind
    first when one is due (``PACED_FIRST``), then the open tasks in ``ordering``, ties
    to the task with the fewest live reservations, then the oldest.

    Gold tasks, and check tasks when a check is due, ignore overlap (``OPEN_TO_ALL``). The
    best candidate is locked in the query that finds it (PostgreSQL skips rows other
    transactions hold, and never waits here); an ordinary task's live reservations are then
    counted again in a statement of their own, so a reservation committed meanwhile is seen.
    The first try runs compiled once (``_best``); a retry, rare, through the ORM.
    """
    tried: list[int] = []
    for _ in range(tries):
        if tried:
            candidates = _candidates(profile, profile.study_id, now, ordering, paced)
            candidates = candidates.select_related("occupation")
            task = candidates.exclude(pk__in=tried).first()
        else:
            task = _best(profile, now, ordering, paced)
        if task is None or task.is_gold or (paced == "check" and task.check_item_id):
            return task
        live = len(_LIVE.rows(task=task.pk, now=now))
        if task.ranking_count + live < task.overlap:
            return task
        tried.append(task.pk)
    return None
