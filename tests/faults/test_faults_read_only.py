"""A database that refuses writes is an outage (issue 33, part 6): PostgreSQL's
read-only error (SQLSTATE 25006, which Django raises as ``InternalError``, not as
``OperationalError``) answers a 503 that says nothing was saved; any other
``InternalError`` stays a 500, as a bug does. The whole fault, a read-only server under
gunicorn, is tests/faults/test_faults.py's."""

from __future__ import annotations

import json

import psycopg
import pytest
from django.db import InternalError, connection, transaction
from django.test import RequestFactory

from annotation.models import Occupation
from web.views import RETRY_AFTER, UNAVAILABLE, server_error


def _answer(error: Exception):
    """The 500 handler's answer to an API submit that raised ``error``."""
    request = RequestFactory().post("/api/tasks/1/ranking/")
    try:
        raise error
    except type(error):
        return server_error(request)


def _wrapped(driver_error: psycopg.Error) -> InternalError:
    """The driver's error as Django's wrapper raises it (``raise ... from`` the driver's)."""
    try:
        try:
            raise driver_error
        except psycopg.Error as error:
            raise InternalError(*error.args) from error
    except InternalError as wrapped:
        return wrapped


def test_a_write_refused_as_read_only_is_a_503_and_another_internal_error_a_500():
    refused = _answer(_wrapped(psycopg.errors.ReadOnlySqlTransaction("read-only transaction")))
    assert refused.status_code == 503 and refused["Retry-After"] == str(RETRY_AFTER)
    assert json.loads(refused.content) == {"detail": UNAVAILABLE}
    other = psycopg.errors.InFailedSqlTransaction("current transaction is aborted")
    assert _answer(_wrapped(other)).status_code == 500
    assert _answer(InternalError("no driver error behind it")).status_code == 500


@pytest.mark.postgres
@pytest.mark.django_db
def test_postgresqls_own_read_only_refusal_through_django_is_a_503():
    with pytest.raises(InternalError) as raised, transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION READ ONLY")
        Occupation.objects.create(name="pilot", slug="pilot")
    assert _answer(raised.value).status_code == 503
    assert not Occupation.objects.filter(slug="pilot").exists()
