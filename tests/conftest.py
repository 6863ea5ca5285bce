"""Shared fixtures. Real services: on CI (CI=true) a test that needs PostgreSQL
or Redis fails when it is missing; elsewhere it skips, saying why."""

import functools
import os

import pytest
from django.conf import settings

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
    if item.get_closest_marker("postgres") and not settings.DATABASES["default"][
        "ENGINE"
    ].endswith("postgresql"):
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
