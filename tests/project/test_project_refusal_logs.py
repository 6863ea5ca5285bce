"""A refused request is one log line, not a traceback (issue 37): Django logs a 403 with
the PermissionDenied that made it, which put a traceback in the log for every refusal;
``core.log_filters.RefusalsWithoutTraceback`` keeps the line and drops the traceback,
and leaves a server error's traceback alone."""

import logging
import sys

from django.test import Client
from staff import make_staff

from core.log_filters import RefusalsWithoutTraceback


def test_a_403_is_logged_as_one_line(db, caplog):
    client = Client()
    client.force_login(make_staff("lead"))  # staff, not a superuser: schedules are not theirs
    with caplog.at_level(logging.WARNING, logger="django.request"):
        response = client.get("/admin/django_celery_beat/periodictask/add/")
    assert response.status_code == 403
    (record,) = [r for r in caplog.records if r.name == "django.request"]
    assert record.status_code == 403 and record.exc_info is None
    assert "Traceback" not in caplog.text and "PermissionDenied" not in caplog.text


def test_a_server_errors_traceback_is_kept():
    try:
        raise RuntimeError("a bug")
    except RuntimeError:
        error = logging.LogRecord("django.request", 40, "", 0, "boom", (), sys.exc_info())
    error.status_code = 500
    refusal = logging.LogRecord("django.request", 30, "", 0, "no", (), error.exc_info)
    refusal.status_code = 404
    keep = RefusalsWithoutTraceback()
    assert keep.filter(error) and error.exc_info is not None
    assert keep.filter(refusal) and refusal.exc_info is None
