from django.core.management.base import BaseCommand

from training.services import rollback

from ._common import service_errors


class Command(BaseCommand):
    help = "Re-activate the version that was active before the current one; recorded."

    def add_arguments(self, parser):
        parser.add_argument("--reason", default="manage.py rollback")

    def handle(self, *args, reason, **options):
        with service_errors():
            checkpoint = rollback(user=None, reason=reason)
        self.stdout.write(f"v{checkpoint.version} is active")
