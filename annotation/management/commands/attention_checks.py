from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from annotation.quality import selectors as quality_selectors
from annotation.quality import standing
from annotation.rankings.exports import pseudonym
from annotation.studies import lifecycle as studies
from core.commands import ServiceCommand


class Command(ServiceCommand):
    help = (
        "List a study's warned or excluded annotators who failed attention checks, each "
        "failed check with its date and the window's width (unknown before widths were "
        "recorded); with --reinstate, reinstate everyone listed in one action, with a reason."
    )

    def add_arguments(self, parser):
        parser.add_argument("--study", metavar="SLUG", help="the study (default: the default one)")
        parser.add_argument(
            "--widths-unknown",
            action="store_true",
            help="only those none of whose failed checks recorded a width (ranked before "
            "widths were recorded, when a phone's layout could hide a check's instruction)",
        )
        parser.add_argument(
            "--reinstate", action="store_true", help="reinstate everyone listed, all or none"
        )
        parser.add_argument("--reason", default="", help="why (recorded; needed to reinstate)")
        parser.add_argument(
            "--by", metavar="USERNAME", help="the staff member who reinstates (recorded)"
        )

    def handle(self, *args, study, widths_unknown, reinstate, reason, by, **options):
        study = studies.resolve(study)
        rows = quality_selectors.failed_attention_checks(study)
        if widths_unknown:
            rows = [row for row in rows if row.widths_unknown]
        if reinstate:
            staff = self._staff(by)
            if not reason.strip():
                raise CommandError("--reinstate needs --reason: the reason is recorded")
        if not rows:
            self.stdout.write(f"study {study.slug}: no warned or excluded annotator failed a check")
            return
        for row in rows:
            checks = ", ".join(
                f"{check.at:%Y-%m-%d %H:%M} "
                + (f"{check.viewport_width} px" if check.viewport_width else "width unknown")
                for check in row.failed
            )
            self.stdout.write(
                f"{pseudonym(row.profile.user_id)}  {row.profile.status}  "
                f"{len(row.failed)} failed: {checks}"
            )
        if reinstate:
            changes = standing.reinstate_all([row.profile for row in rows], staff, reason)
            self.stdout.write(f"{len(changes)} reinstated: {reason.strip()}")

    def _staff(self, username: str | None):
        if not username:
            raise CommandError("--reinstate needs --by USERNAME: a staff member is recorded")
        user = get_user_model().objects.filter(username=username, is_staff=True).first()
        if user is None:
            raise CommandError(f"There is no staff user {username!r}.")
        return user
