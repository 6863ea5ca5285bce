"""``manage.py revoke USERNAME STUDY``: take a staff account's role in a study away."""

from annotation.access import services
from annotation.studies import lifecycle as studies
from core.commands import ServiceCommand


class Command(ServiceCommand):
    help = "Take a staff account's role in a study away (the study's last owner stays)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("study", help="the study's slug")

    def handle(self, *args, username, study, **options):
        found = studies.resolve(study)
        membership = services.revoke(found, username)
        self.stdout.write(f"{username} is no longer {membership.role} of {found.slug}")
