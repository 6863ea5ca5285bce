"""Fixtures of the dashboard tests: staff and annotator browsers, real rankings."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from annotation import services


@pytest.fixture
def staff_client(db) -> Client:
    """A browser signed in as a staff member."""
    user = get_user_model().objects.create_user("staff", password="pw-123456", is_staff=True)
    client = Client()
    client.force_login(user)
    client.user = user
    return client


@pytest.fixture
def annotator_client(db) -> Client:
    """A browser signed in as an annotator (not staff)."""
    user = get_user_model().objects.create_user("annie", password="pw-123456")
    services.give_consent(services.get_profile(user))
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def rank():
    """rank(profile, n): the annotator ranks n tasks through the services, in shown order."""

    def do(profile, n: int) -> None:
        for _ in range(n):
            assignment = services.next_task(profile)
            assert assignment is not None, "no task left to rank"
            services.submit_ranking(profile, assignment.task_id, list(assignment.shown_order))

    return do
