"""The project's WSGI application, for the fault suite only: a request carrying
``X-Fault: kill-after-commit`` is handled in full (its transaction committed, its answer
built, what follows the commit sent) and then its gunicorn worker is SIGKILLed before a
byte of the answer leaves, as when the machine kills a worker for its memory at that
moment. The client sees the connection drop; what it does next is the test.

Served only by ``tests/faults/stack.py``'s gunicorn, never by the project's own
(``web/wsgi.py``).
"""

import os
import signal

from tests.faults.load import KILL_AFTER_COMMIT
from web.wsgi import application as django_application


def application(environ, start_response):
    if environ.get("HTTP_X_FAULT") != KILL_AFTER_COMMIT:
        return django_application(environ, start_response)
    answer = django_application(environ, lambda status, headers, exc_info=None: None)
    b"".join(answer)  # the whole answer made: the view ran, its transaction committed
    os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError("unreachable: the worker was killed")  # pragma: no cover
