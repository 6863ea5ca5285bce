"""Shared fixtures. Real services: on CI (CI=true) a test that needs PostgreSQL
or Redis fails when it is missing; elsewhere it skips, saying why."""

import functools
import os

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from annotation import services
from annotation.models import Item, Occupation, Prompt, PromptType, RankingTask, TaskItem

ON_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


@functools.cache
def _redis_reachable() -> bool:
    if not settings.REDIS_URL:
        return False
    import redis

    try:
        redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=1).ping()
    except redis.RedisError:
        return False
    return True


def _missing_services(item: pytest.Item) -> list[str]:
    missing = []
    if item.get_closest_marker("postgres") and not settings.DATABASES["default"]["ENGINE"].endswith(
        "postgresql"
    ):
        missing.append("PostgreSQL (set DATABASE_URL=postgres://...)")
    if item.get_closest_marker("redis") and not _redis_reachable():
        missing.append("Redis (set REDIS_URL=redis://... to a running server)")
    return missing


def pytest_runtest_setup(item: pytest.Item) -> None:
    missing = _missing_services(item)
    if missing:
        reason = "needs " + " and ".join(missing)
        if ON_CI:
            pytest.fail(f"CI requires the real services: {reason}", pytrace=False)
        pytest.skip(reason)


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    """Accounts are made in many tests; a slow hasher buys nothing there."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def make_tasks(db):
    """make_tasks(n, k, overlap) -> list of tasks, each with k items of one occupation."""

    def make(n: int = 2, k: int = 3, overlap: int = 1) -> list[RankingTask]:
        occupation, _ = Occupation.objects.get_or_create(name="nurse", slug="nurse")
        original, _ = Prompt.objects.get_or_create(
            occupation=occupation,
            prompt_type=PromptType.NEUTRAL,
            origin=None,
            defaults={"text": "A photo of a nurse"},
        )
        tasks = []
        for _ in range(n):
            task = RankingTask.objects.create(occupation=occupation, overlap=overlap)
            for i in range(k):
                prompt = Prompt.objects.create(
                    occupation=occupation,
                    prompt_type=PromptType.NEUTRAL,
                    origin=original,
                    text=f"task {task.pk} prompt {i}",
                )
                item = Item.objects.create(
                    prompt=prompt, image=f"items/{task.pk}-{i}.png", image_sha256=f"{task.pk}-{i}"
                )
                TaskItem.objects.create(task=task, item=item)
            tasks.append(task)
        return tasks

    return make


@pytest.fixture
def annotator(db):
    """annotator(name, consent=True, staff=False, synthetic=False) -> logged-in APIClient."""

    def make(name: str, consent: bool = True, staff: bool = False, synthetic: bool = False):
        user = get_user_model().objects.create_user(name, password="pw-123456", is_staff=staff)
        profile = services.get_profile(user)
        if synthetic:
            profile.is_synthetic = True
            profile.save()
        if consent:
            services.give_consent(profile)
        client = APIClient()
        client.force_authenticate(user)
        client.profile = profile
        return client

    return make
