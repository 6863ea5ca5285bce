"""Cache entries that may name a person, in one namespace that an erasure sweeps.

A page part cached for a while (a chart, a validation study's report with its
annotators' pseudonyms) is stored under ``key(name)``: ``personal:`` and its name.
``sweep()`` deletes every entry of that namespace from a cache (Redis: SCAN and DEL
over its key pattern, never a flush of the database; local memory: its own keys), so
that no copy outlives an erasure; the pages draw themselves again on their next view.
A backend that cannot list its keys is cleared whole (only such a cache's own entries:
counters and locks start again, nothing lasting is lost). ``entries()`` lists what is
there, for tests and audits.
"""

from __future__ import annotations

import re

from django.core.cache import caches
from django.core.cache.backends.base import BaseCache
from django.core.cache.backends.dummy import DummyCache
from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache

PREFIX = "personal:"
# Keys deleted per Redis command.
BATCH = 500


def key(name: str) -> str:
    """The cache key of ``name`` inside the personal namespace."""
    return PREFIX + name


def _redis_pattern(cache: BaseCache) -> str:
    """The glob of every made key in the namespace (any version; Django's key format
    ``prefix:version:key``), the cache's own prefix escaped."""
    escaped = re.sub(r"([\\*?\[\]])", r"\\\1", cache.key_prefix)
    return f"{escaped}:*:{PREFIX}*"


def _locmem_pattern(cache: BaseCache) -> re.Pattern:
    return re.compile(rf"{re.escape(cache.key_prefix)}:[^:]*:{re.escape(PREFIX)}")


def entries(alias: str = "default") -> dict[str, object]:
    """Every entry of the namespace in the cache ``alias``: ``{made key: value}``
    (empty for a backend that cannot list its keys)."""
    cache = caches[alias]
    if isinstance(cache, RedisCache):
        client = cache._cache.get_client(write=True)
        found = list(client.scan_iter(match=_redis_pattern(cache), count=BATCH))
        values = client.mget(found) if found else []
        return {
            k.decode(): cache._cache._serializer.loads(v)
            for k, v in zip(found, values, strict=True)
            if v is not None
        }
    if isinstance(cache, LocMemCache):
        import pickle

        pattern = _locmem_pattern(cache)
        with cache._lock:
            return {k: pickle.loads(v) for k, v in cache._cache.items() if pattern.match(k)}
    return {}


def sweep(alias: str = "default") -> int:
    """Delete every entry of the namespace from the cache ``alias``; how many went (-1
    when the backend could not list them and was cleared whole)."""
    cache = caches[alias]
    if isinstance(cache, RedisCache):
        client = cache._cache.get_client(write=True)
        batch, removed = [], 0
        for made in client.scan_iter(match=_redis_pattern(cache), count=BATCH):
            batch.append(made)
            if len(batch) == BATCH:
                removed += client.delete(*batch)
                batch = []
        if batch:
            removed += client.delete(*batch)
        return removed
    if isinstance(cache, LocMemCache):
        pattern = _locmem_pattern(cache)
        with cache._lock:
            found = [k for k in cache._cache if pattern.match(k)]
            for made in found:
                cache._delete(made)
        return len(found)
    if isinstance(cache, DummyCache):
        return 0
    cache.clear()
    return -1
