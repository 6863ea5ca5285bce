"""Rate throttles that survive an outage of the cache that counts them.

DRF's throttles count in the cache (Redis in production). When it cannot be reached,
its error would turn every throttled request into a 500. ``FailOpen`` lets the request
through instead and logs a warning (at most one a minute per process): a rate limit is
a guard against floods, and refusing every participant while Redis restarts is worse
than a minute without it. Limits that must hold during an outage (password lockouts)
keep their counts in the database, not here.
"""

from __future__ import annotations

import logging
import time

from redis.exceptions import RedisError
from rest_framework import throttling

log = logging.getLogger(__name__)

WARN_EVERY = 60.0
"""Seconds between two warnings of one process while the cache stays down."""

_last_warning = [0.0]


class FailOpen:
    """A throttle mixin: the cache unreachable, the request is allowed (and logged)."""

    def allow_request(self, request, view) -> bool:
        try:
            return super().allow_request(request, view)
        except (RedisError, OSError) as error:
            now = time.monotonic()
            if now - _last_warning[0] >= WARN_EVERY:
                _last_warning[0] = now
                log.warning(
                    "throttle %s let a request through: its cache is unreachable (%s)",
                    getattr(self, "scope", type(self).__name__),
                    type(error).__name__,
                )
            return True


class ScopedRateThrottle(FailOpen, throttling.ScopedRateThrottle):
    """DRF's scoped throttle, failing open when its cache is down."""


class SimpleRateThrottle(FailOpen, throttling.SimpleRateThrottle):
    """DRF's simple throttle (subclassed with a scope), failing open when its cache is down."""
