from django.core.management.base import CommandError

from core.commands import ServiceCommand
from training.management.commands._common import command_actor
from training.perspectives.group_check import before_promotion, promotion_margin
from training.selectors import active_checkpoint
from training.services import activate, get_version


class Command(ServiceCommand):
    help = (
        "Make VERSION the active checkpoint (the former one is archived); recorded. First the "
        "group check: each group's alignment (every demographic field, groups of k or more) "
        "is compared with the active version's on VERSION's snapshot (reports computed here "
        "when missing), and a group that clearly loses more than the margin refuses it; "
        "--force --reason R promotes past it, recorded. The first version and an imported "
        "one skip the check and say so."
    )

    def add_arguments(self, parser):
        parser.add_argument("version", type=int)
        parser.add_argument("--reason", default="")
        parser.add_argument(
            "--force", action="store_true", help="Promote past the group check (needs --reason)."
        )
        parser.add_argument(
            "--margin",
            type=float,
            help="Alignment a group may lose (default STEREORANK_PROMOTION_GROUP_MARGIN, 0.02).",
        )

    def handle(self, *args, version, reason, force, margin, **options):
        margin = promotion_margin() if margin is None else margin
        if not 0 <= margin < 1:
            raise CommandError(f"--margin must be from 0 up to 1, not {margin}")
        checkpoint = get_version(version)
        active = active_checkpoint()
        words = before_promotion(
            checkpoint, compute=True, force=force, reason=reason, margin=margin
        )
        recorded = "; ".join(part for part in (reason.strip(), words) if part)
        activate(
            checkpoint, reason=recorded, actor=command_actor("promote"), checked_against=active
        )
        if words:
            self.stderr.write(words)
        self.stdout.write(f"v{version} is active")
