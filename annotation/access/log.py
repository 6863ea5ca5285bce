"""The access log (GDPR Art. 30 records): who read or exported which study's personal
data, when, and through which surface, in an append-only table (``AccessLogEntry``).

Written for: every export of rankings or pairs (the API and the commands), and every
read of one person's data (an annotator's admin page with demographics, the staff API's
rankings). Owners read their study's log (the admin, ``GET
/api/staff/studies/<slug>/access-log/``, ``manage.py access_log STUDY``).
"""

from __future__ import annotations

import getpass

from django.db.models import QuerySet

from annotation.access.models import AccessLogEntry
from annotation.models.studies import Study

Surface = AccessLogEntry.Surface
Action = AccessLogEntry.Action


def record(user, study: Study, surface: str, action: str, what: str) -> AccessLogEntry:
    """Append one entry; ``user`` None for the command line (the system account's name)."""
    name = f"{getpass.getuser()} (command line)" if user is None else user.get_username()
    return AccessLogEntry.objects.create(
        user=user if user is not None and user.pk else None,
        username=name[:150],
        study=study,
        study_slug=study.slug,
        surface=surface,
        action=action,
        what=what[:300],
    )


def entries(study: Study) -> QuerySet[AccessLogEntry]:
    """The study's log, newest first."""
    return AccessLogEntry.objects.filter(study_id=study.pk).order_by("-at", "-id")


def line(entry: AccessLogEntry) -> str:
    """One entry as a line: when, who, what they did, through which surface, what."""
    return (
        f"{entry.at.isoformat(timespec='seconds')}\t{entry.username}\t{entry.action}\t"
        f"{entry.surface}\t{entry.what}"
    )
