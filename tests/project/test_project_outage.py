"""Outages answered as outages (issue 33, part 2): with the database unreachable a
participant gets a 503 that says nothing was saved (JSON with ``Retry-After`` in the API,
a page that sends them back to their task in the portal), never a 500; once it is back,
the same request stores the ranking once.

The outage: the default connection pointed where no database answers (a closed port on
PostgreSQL, a file in a folder that does not exist on SQLite), so every query raises the
driver's OperationalError as during a restart; the machine's own server is untouched.
"""

from __future__ import annotations

import socket
from contextlib import contextmanager

import pytest
from django.db import connections
from django.test import RequestFactory
from kombu.exceptions import OperationalError as BrokerError
from redis.exceptions import ConnectionError as CacheDown

from annotation.models import Assignment, Ranking
from web.views import RETRY_AFTER, UNAVAILABLE, server_error

pytestmark = pytest.mark.django_db(transaction=True)


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # free once closed: nothing listens there


@contextmanager
def database_down():
    connection = connections["default"]
    saved = dict(connection.settings_dict)
    connection.close()
    if connection.vendor == "sqlite":
        connection.settings_dict["NAME"] = "/nonexistent/stereorank/db.sqlite3"
    else:
        connection.settings_dict.update(HOST="127.0.0.1", PORT=str(_closed_port()))
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)


def _reserved(client, make_tasks) -> tuple[int, list[int]]:
    make_tasks(1, k=3)
    task = client.post("/api/tasks/next/").json()
    return task["id"], [item["id"] for item in task["items"]][::-1]


def test_an_api_submit_during_an_outage_is_a_503_and_stored_once_when_retried(
    make_tasks, annotator
):
    client = annotator("ann")
    client.raise_request_exception = False
    task_id, order = _reserved(client, make_tasks)
    url = f"/api/tasks/{task_id}/ranking/"
    with database_down():
        response = client.post(url, {"order": order}, format="json")
    assert response.status_code == 503
    assert response.json() == {"detail": UNAVAILABLE}
    assert response["Retry-After"] == str(RETRY_AFTER)
    assert not Ranking.objects.exists()  # nothing half written

    assert client.post(url, {"order": order}, format="json").status_code == 201
    assert client.post(url, {"order": order}, format="json").status_code == 200  # a retry
    assert list(Ranking.objects.values_list("order", flat=True)) == [order]


def test_a_portal_submit_during_an_outage_gets_the_page_and_is_stored_when_retried(
    make_tasks, portal_client
):
    client = portal_client("ann")
    client.raise_request_exception = False
    make_tasks(1, k=3)
    assert client.get("/rank/").status_code == 200
    reservation = Assignment.objects.get()
    form = {"task_id": reservation.task_id, "order": ",".join(map(str, reservation.shown_order))}
    with database_down():
        page = client.post("/rank/", form)
    assert page.status_code == 503 and page["Retry-After"] == str(RETRY_AFTER)
    text = page.content.decode()
    assert "nothing was saved" in text and 'href="/rank/"' in text  # back to the task
    assert "Server error" not in text
    assert not Ranking.objects.exists()

    assert client.post("/rank/", form).status_code == 302
    assert Ranking.objects.get().order == reservation.shown_order


@pytest.mark.parametrize("outage", [BrokerError("broker down"), CacheDown("cache down")])
def test_a_broker_or_cache_outage_is_a_503_and_a_bug_stays_a_500(outage):
    request = RequestFactory().post("/api/tasks/1/ranking/")
    try:
        raise outage
    except type(outage):
        assert server_error(request).status_code == 503
    try:
        raise ValueError("a bug")
    except ValueError:
        assert server_error(request).status_code == 500
