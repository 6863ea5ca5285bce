"""The next-task query can be served by the ``open_task`` partial index: its cost
then follows the open tasks, not the finished ones (figures: benchmarks/scale.py)."""

import pytest
from django.db import connection, transaction
from django.utils import timezone

from annotation.assignment.next_task import _candidates

pytestmark = pytest.mark.postgres


def test_the_candidate_query_matches_the_open_task_index(make_tasks, annotator):
    """(Not yet when a gold task is due: ``open OR gold`` is not the index's predicate.)"""
    make_tasks(3, k=4)
    profile = annotator("ann").profile
    with transaction.atomic():
        sql, params = (
            _candidates(profile, profile.study_id, timezone.now(), "uniform", None)
            .values("pk")[:1]
            .query.sql_with_params()
        )
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_seqscan = off")  # tiny tables: the plan as at scale
            cursor.execute("EXPLAIN " + sql, params)
            plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "open_task" in plan
