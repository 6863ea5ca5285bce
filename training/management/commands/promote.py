from django.core.management.base import BaseCommand

from training.services import get_version, promote

from ._common import service_errors


class Command(BaseCommand):
    help = "Make VERSION the active checkpoint (the former one is archived); recorded."

    def add_arguments(self, parser):
        parser.add_argument("version", type=int)
        parser.add_argument("--reason", default="manage.py promote")

    def handle(self, *args, version, reason, **options):
        with service_errors():
            promote(get_version(version), user=None, reason=reason)
        self.stdout.write(f"v{version} is active")
