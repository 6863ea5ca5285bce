"""Erase one annotator's data on a request received by e-mail (or any other way)."""

from django.core.management.base import CommandError

from annotation.models.studies import Erasure
from annotation.participants.erasure import erase_annotator
from annotation.rankings.exports import annotator_for_pseudonym
from core.commands import ServiceCommand


class Command(ServiceCommand):
    help = (
        "Erase an annotator's data, named by the pseudonym exports show (a-...): "
        "demographics, external ids and rankings deleted, the account deactivated. "
        "The same as 'stop and erase my data' in the portal. Cannot be undone."
    )

    def add_arguments(self, parser):
        parser.add_argument("pseudonym", help="the annotator's pseudonym, e.g. a-0123456789ab")
        parser.add_argument(
            "--no-input", action="store_false", dest="interactive", help="do not ask to confirm"
        )

    def handle(self, *args, pseudonym: str, interactive: bool, **options):
        profile = annotator_for_pseudonym(pseudonym)
        if interactive and profile.erased_at is None:
            answer = input(
                f"Erase the data of {pseudonym} ({profile.rankings.count()} rankings)? "
                "This cannot be undone. Type 'yes' to go on: "
            )
            if answer.strip().lower() != "yes":
                raise CommandError("Nothing erased.")
        erasure = erase_annotator(profile, via=Erasure.Via.STAFF)
        self.stdout.write(
            f"Erased {pseudonym}: {erasure.rankings_removed} rankings deleted, demographics and "
            "external ids deleted, account deactivated."
        )
