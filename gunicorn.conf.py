"""gunicorn settings for the web service (Dockerfile, docker-compose, benchmarks/portal_load.py).

Threaded workers: a request mostly waits on PostgreSQL, so a few threads per
process keep the CPUs busy; one process per CPU sidesteps the GIL. Override
with GUNICORN_WORKERS / GUNICORN_THREADS.

``reuse_port``: each worker listens on a socket of its own (SO_REUSEPORT), so the
kernel spreads new connections across the workers; on one shared socket the
worker that wakes first could take every keep-alive client (all 32 of the load
benchmark sometimes landed on one worker while the other idled).
"""

import multiprocessing
import os

bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
worker_class = "gthread"
workers = int(os.environ.get("GUNICORN_WORKERS", multiprocessing.cpu_count()))
threads = int(os.environ.get("GUNICORN_THREADS", 4))
keepalive = 5
reuse_port = True
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "warning")
# An access log (none unless asked for, e.g. --access-logfile) names nobody: no client
# address, no query string (an entry link's carries the platform's participant id), no
# referrer, no user agent (docs/privacy.md).
access_log_format = '%(t)s "%(m)s %(U)s %(H)s" %(s)s %(B)s %(M)sms'


def on_starting(server) -> None:
    """gunicorn's own loggers drop query strings and resume-link secrets too (a refused
    path in the error log, the path in the access log): core/log_filters.py."""
    import logging

    from core.log_filters import NoQueryStrings

    for name in ("gunicorn.error", "gunicorn.access"):
        logging.getLogger(name).addFilter(NoQueryStrings())
