from django.core.management.base import BaseCommand

from annotation.participants import services


class Command(BaseCommand):
    help = "Create (or update the password of) an annotator account."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--password", required=True)
        parser.add_argument("--consent", action="store_true", help="record consent now")
        parser.add_argument(
            "--staff",
            action="store_true",
            help="a staff account (no superuser; grant gives it a role in a study)",
        )

    def handle(self, *args, username, password, consent, staff, **options):
        created = services.create_annotator(username, password, staff=staff, consent=consent)
        self.stdout.write(f"{'created' if created else 'updated'} {username}")
