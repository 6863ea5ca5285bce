"""``manage.py allow_group_heads STUDY FIELD --owner USERNAME --reason TEXT [--withdraw]``."""

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from annotation.access import roles
from annotation.access.models import StudyMembership
from annotation.studies.lifecycle import resolve
from core.commands import ServiceCommand
from training.models import GroupHeadChoice
from training.runs.group_heads import special_categories


class Command(ServiceCommand):
    help = (
        "Record a study owner's choice to train group heads on a special-category field "
        "(religion_or_belief by default): the owner must hold the demographics permission "
        "for the study, and the reason is kept with who chose it and when. --withdraw "
        "removes the choice (versions already trained keep their heads)."
    )

    def add_arguments(self, parser):
        parser.add_argument("study")
        parser.add_argument("field")
        parser.add_argument("--owner", required=True, help="The study owner who chooses it.")
        parser.add_argument("--reason", default="", help="Why (required to allow).")
        parser.add_argument("--withdraw", action="store_true")

    def handle(self, *args, study, field, owner, reason, withdraw, **options):
        found = resolve(study)
        if field not in special_categories():
            raise CommandError(f"{field} is not a special category: group heads need no choice")
        user = get_user_model().objects.filter(username=owner).first()
        member = StudyMembership.objects.filter(
            study=found, user=user, role=roles.OWNER, demographics=True
        ).exists()
        if user is None or not member:
            raise CommandError(
                f"{owner} is not an owner of {found.slug} with the demographics permission"
            )
        if withdraw:
            GroupHeadChoice.objects.filter(study=found, field=field).delete()
            self.stdout.write(f"{field}: group heads no longer chosen for {found.slug}")
            return
        if not reason.strip():
            raise CommandError("say why: --reason is required to allow a special category")
        GroupHeadChoice.objects.update_or_create(
            study=found,
            field=field,
            defaults={"chosen_by": user, "chosen_by_name": owner, "reason": reason.strip()},
        )
        self.stdout.write(f"{field}: group heads chosen for {found.slug} by {owner}")
