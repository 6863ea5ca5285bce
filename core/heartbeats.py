"""Heartbeat keys in the ``health`` cache, one home for their names.

Written by ``web/heartbeat.py`` (every worker and beat, from a daemon thread), read by
``/healthz`` (``web/health.py``, per queue: ``worker:<queue>``, ``beat``) and by the
lost-run sweep (``training/runs/recovery.py``, per worker: ``node:<node name>``, the
name a training run records as its holder).
"""

from __future__ import annotations


def heartbeat_key(component: str) -> str:
    """The health-cache key of one component's heartbeat, e.g. ``heartbeat:worker:gpu``."""
    return f"heartbeat:{component}"


def node_component(node: str) -> str:
    """The component one worker beats under by its own node name (``celery@host``)."""
    return f"node:{node}"


def read_nodes(nodes: set[str]) -> dict[str, float]:
    """The last beat (``time.time()``) of each of these workers that has one; raises when
    the cache cannot be read (the caller must then tell "unknown" from "missing")."""
    from django.core.cache import caches

    keys = {heartbeat_key(node_component(node)): node for node in nodes}
    found = caches["health"].get_many(list(keys))
    return {keys[key]: at for key, at in found.items()}
