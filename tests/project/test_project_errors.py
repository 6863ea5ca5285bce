"""One error path: the project's refusals become 4xx/messages/one-line exits, and any
other exception stays a loud failure."""

import pytest
from django.contrib.messages import get_messages
from django.core.management.base import CommandError
from django.test import RequestFactory

from annotation.errors import AlreadyRanked, ConsentRequired, InvalidAnswer, TaskNotFound
from core.commands import ServiceCommand
from core.errors import (
    StereorankError,
    api_exception_handler,
    http_status,
    refusals_as_messages,
)
from training.errors import EvaluationPending, RegistryConflict, RunError, VersionNotFound


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (InvalidAnswer("bad order"), 400),
        (RunError("bad hyper-parameter"), 400),
        (ConsentRequired("consent first"), 403),
        (TaskNotFound("no task 9"), 404),
        (VersionNotFound("no version 9"), 404),
        (AlreadyRanked("ranked already"), 409),
        (RegistryConflict("already active"), 409),
    ],
)
def test_each_kind_has_its_status_and_message(error, status):
    assert http_status(error) == status
    response = api_exception_handler(error, {})
    assert response.status_code == status and response.data == {"detail": error.message}


def test_evaluation_pending_names_the_versions():
    class Obj:
        def __init__(self, **kw):
            self.__dict__.update(kw)

    error = EvaluationPending(Obj(pk=3), [Obj(version=1), Obj(version=2)])
    assert http_status(error) == 409
    assert error.message == "v1 and v2 not evaluated on snapshot 3 yet"


def test_a_bug_is_not_translated():
    """DRF's handler answers None for a plain exception, so DRF re-raises it: a 500."""
    assert api_exception_handler(ValueError("a bug"), {"request": None, "view": None}) is None


def test_the_api_answers_404_with_the_message(annotator, make_tasks):
    make_tasks(1, 3)
    client = annotator("alice")
    response = client.post("/api/tasks/999/ranking/", {"order": [1, 2, 3]}, format="json")
    assert response.status_code == 404
    assert response.json() == {"detail": "Task 999 does not exist."}


@pytest.mark.django_db
def test_dashboards_show_a_refusal_as_a_message_and_let_a_bug_through(rf: RequestFactory):
    from django.contrib.messages.storage.fallback import FallbackStorage

    @refusals_as_messages("dashboards:registry")
    def refused(request):
        raise RegistryConflict("v1 is already active")

    @refusals_as_messages("dashboards:registry")
    def buggy(request):
        raise ValueError("a bug")

    request = rf.post("/dashboards/registry/1/promote")
    request.session = {}
    request._messages = FallbackStorage(request)
    response = refused(request)
    assert response.status_code == 302 and response.url == "/dashboards/registry/"
    assert [m.message for m in get_messages(request)] == ["v1 is already active"]
    with pytest.raises(ValueError, match="a bug"):
        buggy(request)


def test_commands_exit_with_one_line_and_let_a_bug_through():
    class Refusing(ServiceCommand):
        def handle(self, *args, **options):
            raise StereorankError("there is no version 7")

    class Buggy(ServiceCommand):
        def handle(self, *args, **options):
            raise KeyError("a bug")

    with pytest.raises(CommandError, match="^there is no version 7$"):
        Refusing().execute(no_color=True, force_color=False, skip_checks=True)
    with pytest.raises(KeyError):
        Buggy().execute(no_color=True, force_color=False, skip_checks=True)
