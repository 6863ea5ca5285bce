"""``manage.py grant USERNAME STUDY --role owner|researcher|viewer [--demographics]``."""

from annotation.access import roles, services
from annotation.studies import lifecycle as studies
from core.commands import ServiceCommand


class Command(ServiceCommand):
    help = (
        "Give a staff account a role in a study (replacing any role it had there): "
        + "; ".join(f"{role}: {text}" for role, text in roles.DESCRIPTIONS.items())
        + ". --demographics: it may also read any one person's demographic answers."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("study", help="the study's slug")
        parser.add_argument("--role", required=True, choices=roles.ROLES)
        parser.add_argument(
            "--demographics",
            action="store_true",
            help="may read one person's answers (exports with demographics, an annotator's "
            "admin page); researchers and owners only",
        )

    def handle(self, *args, username, study, role, demographics, **options):
        found = studies.resolve(study)
        membership, created = services.grant(found, username, role, demographics)
        flag = " with the demographics permission" if membership.demographics else ""
        verb = "is now" if created else "is now (was another role)"
        self.stdout.write(f"{username} {verb} {role} of {found.slug}{flag}")
