"""core/prepared.py: a query compiled once answers as the ORM does for every value bound."""

import threading
from datetime import timedelta

import pytest
from django.db.models import DateTimeField, IntegerField
from django.utils import timezone

from annotation.models import AnnotatorProfile, Assignment, Ranking, RankingTask
from core.prepared import Param, Prepared, columns, instance


def _rank(profile, task, order):
    return Ranking.objects.create(task=task, annotator=profile, order=order, shown_order=order)


def test_values_bound_at_each_run_give_the_orms_rows(make_tasks, annotator):
    first, second = make_tasks(2, k=3)
    a, b = annotator("a").profile, annotator("b").profile
    _rank(a, first, [i.pk for i in first.items.all()])
    _rank(b, second, list(reversed([i.pk for i in second.items.all()])))
    builds = []

    def build():
        builds.append(1)
        return Ranking.objects.filter(annotator_id=Param("who", IntegerField())).values(
            "task_id", "order", "annotator__user__username"
        )

    query = Prepared(build)
    for profile in (a, b, a):
        expected = list(
            Ranking.objects.filter(annotator=profile).values(
                "task_id", "order", "annotator__user__username"
            )
        )
        assert query.rows(who=profile.pk) == expected
    assert isinstance(query.rows(who=a.pk)[0]["order"], list)  # the JSON field's converter
    assert len(builds) == 1, "compiled once for this thread and connection"
    assert query.first(who=-1) is None


def test_a_datetime_param_is_prepared_as_the_field_stores_it(make_tasks, annotator):
    (task,) = make_tasks(1)
    profile = annotator("a").profile
    now = timezone.now()
    Assignment.objects.create(
        task=task, annotator=profile, shown_order=[], reserved_until=now + timedelta(minutes=5)
    )
    live = Prepared(
        lambda: Assignment.objects.filter(reserved_until__gt=Param("now", DateTimeField())).values(
            "pk"
        )
    )
    assert len(live.rows(now=now)) == 1
    assert live.rows(now=now + timedelta(minutes=6)) == []


def test_each_thread_compiles_its_own(make_tasks, transactional_db):
    make_tasks(1)
    builds = []

    def build():
        builds.append(threading.get_ident())
        return RankingTask.objects.filter(pk__gt=Param("after", IntegerField())).values("pk")

    query = Prepared(build)
    assert len(query.rows(after=0)) == 1
    seen = []
    thread = threading.Thread(target=lambda: seen.append(len(query.rows(after=0))))
    thread.start()
    thread.join()
    assert seen == [1] and len(set(builds)) == 2


def test_instance_loads_a_model_and_none_for_a_missing_left_join(annotator, db):
    profile = annotator("a").profile
    row = (
        AnnotatorProfile.objects.filter(pk=profile.pk)
        .values(*columns(AnnotatorProfile), *columns(Assignment, "assignments__"))
        .get()
    )
    loaded = instance(AnnotatorProfile, row)
    assert (loaded.pk, loaded.user_id, loaded.quota) == (profile.pk, profile.user_id, profile.quota)
    assert not loaded._state.adding
    assert instance(Assignment, row, "assignments__") is None


def test_server_binding_prepares_the_orms_writes_and_restores_the_cursor(make_tasks, db):
    """On PostgreSQL an ORM write run again inside ``server_binding`` becomes one prepared
    statement (its values bound as parameters); outside it queries bind client-side as
    before. Elsewhere (SQLite) the block changes nothing."""
    from django.db import connection
    from django.db.models import F

    from core.prepared import server_binding

    (task,) = make_tasks(1)

    def bump():
        RankingTask.objects.filter(pk=task.pk).update(priority=F("priority") + 1)

    if connection.vendor != "postgresql":
        with server_binding():
            bump()
        task.refresh_from_db()
        assert task.priority == 1
        return
    connection.ensure_connection()
    raw = connection.connection
    before = raw.cursor_factory

    def prepared() -> int:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s",
                ['UPDATE "annotation_rankingtask" SET "priority"%'],
            )
            return cursor.fetchone()[0]

    for _ in range(raw.prepare_threshold + 1):
        bump()
    assert prepared() == 0, "client-side binding outside the block"
    with server_binding():
        for _ in range(raw.prepare_threshold + 1):
            bump()
    assert prepared() == 1
    assert raw.cursor_factory is before
    task.refresh_from_db()
    assert task.priority == 2 * (raw.prepare_threshold + 1)


@pytest.mark.postgres
def test_a_prepared_query_heals_a_connection_the_server_killed(make_tasks, transactional_db):
    """After a PostgreSQL restart every persistent connection is dead. A request's first
    query is often a prepared one (the API's token lookup): it must pass Django's health
    check and reconnect, as ``connection.cursor()`` does, not fail with a 500."""
    from django.db import connection, connections

    from core.prepared import server_binding

    (task,) = make_tasks(1)
    lookup = Prepared(
        lambda: RankingTask.objects.filter(pk=Param("task", IntegerField())).values("id")
    )
    enabled, connection.health_check_enabled = connection.health_check_enabled, True
    try:
        for attempt in ("query", "write"):
            connection.ensure_connection()
            pid = connection.connection.info.backend_pid
            killer = connections.create_connection("default")
            with killer.cursor() as cursor:  # what a restart does to the backend
                cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
            killer.close()
            connection.health_check_done = False  # a new request
            if attempt == "query":
                assert lookup.first(task=task.pk)["id"] == task.pk
            else:
                with server_binding():
                    assert RankingTask.objects.filter(pk=task.pk).update(priority=2) == 1
            assert connection.connection.info.backend_pid != pid
    finally:
        connection.health_check_enabled = enabled
