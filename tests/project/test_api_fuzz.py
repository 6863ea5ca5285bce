"""Schemathesis walks every operation of /api/schema/ against the real Django app.

As an annotator and as staff (token auth, as API clients log in), with generated
valid and invalid inputs: no response may be a 5xx, and every response must
match the schema (status code, content type, headers, body). Bounded and
deterministic: a few examples per operation, derandomized. Runs on SQLite.
"""

import pytest
import schemathesis
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from rest_framework.throttling import SimpleRateThrottle
from schemathesis.checks import CHECKS, load_all_checks

from annotation.accounts import tokens
from tests.schema_helpers import served_schema

MAX_EXAMPLES = 12
load_all_checks()
(POSITIVE_DATA_ACCEPTANCE,) = CHECKS.get_by_names(["positive_data_acceptance"])
# Well-formed requests that the app refuses for what the data refers to or the state
# it finds, which a schema cannot express: the generator does not know the
# credentials, the task's item ids, the snapshots, or whether rankings exist. (Unknown
# versions are 404s, which the check accepts; "nothing to roll back" and "no
# rankings" are 409 conflicts.)
STATE_DEPENDENT_400 = {
    "POST /api/auth/token/": "wrong credentials",
    "POST /api/tasks/{task_id}/ranking/": "not a permutation of this task's items",
    "GET /api/training/checkpoints/compare/": "no such snapshot",
    "GET /api/training/checkpoints/{version}/perspectives/": "no such snapshot",
    "POST /api/training/checkpoints/rollback/": "no active version (409)",
    "POST /api/training/runs/": "no such snapshot",
    "POST /api/training/snapshots/": "no rankings to snapshot (409)",
    "PUT /api/me/demographics/": "keys must be the study's demographic fields",
    "PATCH /api/me/demographics/": "keys must be the study's demographic fields",
    "GET /api/staff/studies/{slug}/validation/": "a collection study (the default one exists)",
    "GET /api/staff/quality/": "no such study (?study=)",
    "POST /api/staff/studies/": "a count of 0 needs quality_off_reason (a rule across fields)",
}
# Each role's token, issued by the ``accounts`` fixture (the auth reads it per request).
TOKENS = {"annotator": "", "staff": ""}


def _schema_as(role: str):
    """The schema as the app serves staff, bound to the app (no server, no network),
    sending ``role``'s token: schemathesis knows it is real auth, and also probes
    each operation without it and with a wrong one."""
    # The schema is staff-only: read as the view serves it to staff, then bound to the app.
    loaded = schemathesis.openapi.from_dict(served_schema())
    loaded.app, loaded.location = get_wsgi_application(), "/api/schema/"
    loaded.config.generation.update(max_examples=MAX_EXAMPLES, deterministic=True)

    @loaded.auth()
    class RoleToken:
        def get(self, case, ctx):
            return TOKENS[role]

        def set(self, case, data, ctx):
            case.headers = {**(case.headers or {}), "Authorization": f"Token {data}"}

    return loaded


annotator_schema = _schema_as("annotator")
staff_schema = _schema_as("staff")


@pytest.fixture
def keep_the_test_connection():
    """The app is called as WSGI, not through Django's test client, so do what the client
    does: a finished request must not close the test's database connection."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def accounts(annotator, make_tasks, monkeypatch, keep_the_test_connection) -> None:
    """A consenting annotator and a staff member with the fixed tokens, and data to find
    (two tasks of three items). Throttling is off here (it has its own tests) so that
    a burst of generated requests is not answered 429."""
    make_tasks(2, k=3)
    monkeypatch.setattr(SimpleRateThrottle, "allow_request", lambda self, request, view: True)
    for role in TOKENS:
        TOKENS[role] = tokens.issue(annotator(role, staff=role == "staff").profile.user)[1]


def _call_and_validate(case) -> None:
    """Send the case; every check but, where a 400 depends on state, "valid data accepted"."""
    excluded = [POSITIVE_DATA_ACCEPTANCE] if case.operation.label in STATE_DEPENDENT_400 else []
    case.call_and_validate(excluded_checks=excluded)


BOUNDED = settings(
    max_examples=MAX_EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)


@pytest.mark.django_db
@annotator_schema.parametrize()
@BOUNDED
def test_as_an_annotator_no_operation_answers_5xx_or_off_schema(case, accounts):
    _call_and_validate(case)


@pytest.mark.django_db
@staff_schema.parametrize()
@BOUNDED
def test_as_staff_no_operation_answers_5xx_or_off_schema(case, accounts):
    _call_and_validate(case)
