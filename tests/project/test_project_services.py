"""The real services the suite relies on are the ones it is configured for."""

import pytest
from django.db import connection


@pytest.mark.postgres
@pytest.mark.django_db
def test_database_is_postgresql():
    with connection.cursor() as cursor:
        cursor.execute("select version()")
        assert cursor.fetchone()[0].startswith("PostgreSQL")


@pytest.mark.redis
def test_redis_round_trip():
    import redis
    from django.conf import settings

    client = redis.Redis.from_url(settings.REDIS_URL)
    client.set("stereorank:test", "ok", ex=10)
    assert client.get("stereorank:test") == b"ok"
