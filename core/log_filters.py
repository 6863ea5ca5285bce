"""Logging filters that keep identifiers and secrets out of log lines.

``NoQueryStrings`` cuts the query string from every path a record carries (a crowd
platform's entry link holds the participant's platform id there, ``?PROLIFIC_PID=...``)
and the secret from a participant's resume link (``/join/<study>/resume/<secret>/``,
which opens their participation): the development server (``django.server``) logs each
request line as it came, Django logs a refused path, gunicorn's access log the path.
``web/settings.py``'s ``LOGGING`` puts it on that logger and on the console handler;
``gunicorn.conf.py`` on gunicorn's loggers.

``RefusalsWithoutTraceback`` keeps a refused request (a 4xx: a 403, a 404, a 405) to its
one line on ``django.request``: Django logs it with the exception that made it, and a
traceback for a refusal is noise where a person reads logs. A 5xx keeps its traceback.
"""

from __future__ import annotations

import logging
import re

# A path followed by its query string: "/join/x/?PROLIFIC_PID=..." up to a space or quote.
_QUERY = re.compile(r"(/[^\s?\"']*)\?(?!\[query removed\])[^\s\"']*")
REMOVED = "?[query removed]"
# A resume link's secret: "/resume/<secret>" up to a slash, space or quote.
_SECRET = re.compile(r"(/resume/)(?!\[secret removed\])[^/\s?\"']+")
SECRET_REMOVED = "[secret removed]"


def without_query(text: str) -> str:
    """``text`` with the query string of every path in it replaced by ``REMOVED`` and
    every resume link's secret by ``SECRET_REMOVED``; idempotent (a logger configured
    twice filters a record twice)."""
    text = _SECRET.sub(lambda m: m.group(1) + SECRET_REMOVED, text)
    return _QUERY.sub(lambda m: m.group(1) + REMOVED, text)


class NoQueryStrings(logging.Filter):
    """Rewrites a record's message and string arguments without query strings."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = without_query(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(without_query(a) if isinstance(a, str) else a for a in record.args)
        elif isinstance(record.args, dict):
            record.args = {
                k: without_query(a) if isinstance(a, str) else a for k, a in record.args.items()
            }
        return True


class RefusalsWithoutTraceback(logging.Filter):
    """Drops the traceback from ``django.request``'s records of 4xx answers."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if status is not None and 400 <= status < 500:
            record.exc_info = None
            record.exc_text = None
        return True
