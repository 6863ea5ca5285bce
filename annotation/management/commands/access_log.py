"""``manage.py access_log STUDY``: who read or exported the study's personal data, when,
through which surface (the access log, newest first; tab-separated)."""

from annotation.access import log
from annotation.studies import lifecycle as studies
from core.commands import ServiceCommand


class Command(ServiceCommand):
    help = (
        "Print a study's access log: when, who, read or export, through which surface "
        "(api, dashboard, admin, command), what; newest first."
    )

    def add_arguments(self, parser):
        parser.add_argument("study", help="the study's slug")
        parser.add_argument("--limit", type=int, default=None, help="the newest N entries only")

    def handle(self, *args, study, limit, **options):
        entries = log.entries(studies.resolve(study))
        if limit is not None:
            entries = entries[: max(limit, 0)]
        for entry in entries.iterator():
            self.stdout.write(log.line(entry))
