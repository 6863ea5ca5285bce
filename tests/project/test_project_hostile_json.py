"""Hostile JSON is a 400 everywhere (issue 43): every API route that takes a body, found
by walking the URL conf, is sent a set of hostile bodies as a participant and as staff;
each is refused by the one parser (``core.api_bodies``) with a 400, 413 or 415 that says
what is wrong, before any handler runs (a user the route is not for is refused before
the body is read), and nothing is written. The parser's rules are
checked against Python's own ``json`` on the same texts."""

import json

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import caches
from django.db import connection, transaction
from django.test import Client
from rest_framework.exceptions import ParseError
from url_walk import api_views

from annotation.participants import services
from core import api_bodies

LIMIT = 64 * 1024  # DATA_UPLOAD_MAX_MEMORY_SIZE for the test: a body over it is cheap to send

HOSTILE = {
    "deep nesting": ("[" * 5000 + "]" * 5000, "application/json", 400, "levels deep"),
    "deep object": ('{"a":' * 40 + "1" + "}" * 40, "application/json", 400, "levels deep"),
    "NaN": ('{"order": [NaN]}', "application/json", 400, "NaN"),
    "Infinity": ('{"demographics": {"age": -Infinity}}', "application/json", 400, "Infinity"),
    "duplicate keys": ('{"order": [1], "order": [2]}', "application/json", 400, "twice"),
    "broken": ('{"order": [1,', "application/json", 400, "JSON parse error"),
    "huge array": ("[" + "0," * (LIMIT // 2) + "0]", "application/json", 413, "over"),
    "over the size limit": ('"' + "x" * LIMIT + '"', "application/json", 413, "over"),
    "wrong content type": ('{"order": [1]}', "text/plain", 415, "Unsupported media type"),
    "1e999": ('{"order": [1e999]}', "application/json", 400, "too large a number"),
    # UTF-7 writes "[" as "+AFs-": brackets the count would not see (the reviewer's attack)
    "utf-7": ('{"order": ' + "+AFs-" * 40 + "}", "application/json; charset=utf-7", 415, "UTF-8"),
    "no charset": ('{"order": [1]}', "application/json; charset=rot13", 415, "UTF-8"),
}


def rows_written() -> int:
    """Rows inserted, updated or deleted so far on this connection (SQLite) or in this
    transaction (PostgreSQL): what a refused request must leave unchanged."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)"
                " FROM pg_stat_xact_user_tables"
            )
            return int(cursor.fetchone()[0])
    connection.ensure_connection()
    return connection.connection.total_changes


@pytest.fixture
def clients(db, make_tasks):
    """A participant, and the installation's administrator (a superuser: every staff
    route's permission passes, so the body is what is refused)."""
    caches["default"].clear()  # the log-in throttle counts per address: start from none
    make_tasks(2, 3)
    participant = get_user_model().objects.create_user("hostile-p", password="pw-123456")
    services.give_consent(services.get_profile(participant))
    staff = get_user_model().objects.create_superuser("hostile-s", password="pw-123456")
    made = {}
    for name, user in (("participant", participant), ("staff", staff)):
        client = Client(raise_request_exception=False)
        client.force_login(user)
        made[name] = client
    # The token door (log-out takes only a token): the participant's API token.
    key = (
        Client()
        .post(
            "/api/auth/token/",
            {"username": "hostile-p", "password": "pw-123456"},
            content_type="application/json",
        )
        .json()["token"]
    )
    made["participant's token"] = Client(
        raise_request_exception=False, HTTP_AUTHORIZATION=f"Token {key}"
    )
    return made


def test_every_route_that_takes_a_body_refuses_hostile_json(clients, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = LIMIT
    routes = sorted({(path, method) for path, _, methods in api_views() for method in methods})
    assert len(routes) >= 15, routes  # the walk found the API
    assert ("/api/tasks/1/ranking/", "post") in routes
    assert ("/api/me/demographics/", "put") in routes
    before = rows_written()
    failures, parsed = [], set()
    for who, client in clients.items():
        for path, method in routes:
            for label, (body, content_type, status, says) in HOSTILE.items():
                # generic: the body goes as bytes, whatever charset the header names
                response = client.generic(method.upper(), path, body, content_type=content_type)
                detail = response.content.decode(errors="replace")
                if response.status_code == status and says in detail:
                    parsed.add((path, method, label))  # refused by the parser, saying why
                elif response.status_code not in (401, 403, 429):  # refused before the body
                    failures.append((who, method, path, label, response.status_code, detail[:120]))
    assert failures == []
    # Every route, every body: refused by the parser for one of them, with its reason.
    assert {(p, m, label) for p, m in routes for label in HOSTILE} == parsed
    assert rows_written() == before


def test_an_empty_body_is_never_a_500(clients):
    """An empty body is no JSON to refuse: each view answers it as it answers no data
    (each request rolled back, so every route sees the same rows)."""
    failures = []
    for who, client in clients.items():
        for path, _, methods in api_views():
            for method in methods:
                with transaction.atomic():
                    response = getattr(client, method)(path, "", content_type="application/json")
                    transaction.set_rollback(True)
                if response.status_code >= 500:
                    failures.append((who, method, path, response.status_code))
    assert failures == []


@pytest.mark.parametrize(
    "text",
    ['{"a": [1, {"b": "[[[["}], "c": null}', "[]", '"\\"{"', "[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]"],
)
def test_what_the_parser_accepts_is_what_json_reads(text):
    assert api_bodies.loads(text.encode()) == json.loads(text)


def test_the_depth_counts_brackets_outside_strings_only():
    assert api_bodies.depth(b'["[[[[", {"]": ["{"]}]') == 3
    assert api_bodies.depth(b'"\\"[[["') == 0
    with pytest.raises(ParseError, match="17 levels deep"):
        api_bodies.loads(b"[" * 17 + b"]" * 17)


def test_every_api_view_parses_its_body_first():
    """``ParsedFirst`` is every project API view's first base: a new view that forgot it
    would act on a body it never reads."""
    from core.api_bodies import ParsedFirst

    missing = sorted(
        view.__name__ for _, view, _ in api_views() if not issubclass(view, ParsedFirst)
    )
    assert missing == []
