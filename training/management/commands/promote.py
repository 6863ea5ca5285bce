from django.core.management.base import CommandError

from core.commands import ServiceCommand
from training.errors import GroupsFall
from training.management.commands._common import command_actor
from training.perspectives.group_check import DEFAULT_MARGIN, group_losses, verdict
from training.selectors import active_checkpoint
from training.services import get_version, promote, report_snapshot


class Command(ServiceCommand):
    help = (
        "Make VERSION the active checkpoint (the former one is archived); recorded. "
        "--check-groups first compares each group's alignment with the active version's on "
        "VERSION's snapshot (reports computed here when missing) and refuses when a group "
        "clearly loses more than --margin."
    )

    def add_arguments(self, parser):
        parser.add_argument("version", type=int)
        parser.add_argument("--reason", default="")
        parser.add_argument(
            "--check-groups", action="store_true", help="Refuse when a group falls."
        )
        parser.add_argument(
            "--field", action="append", help="A demographic field to check (repeat; all)."
        )
        parser.add_argument("--margin", type=float, default=DEFAULT_MARGIN)

    def handle(self, *args, version, reason, check_groups, field, margin, **options):
        if not 0 <= margin < 1:
            raise CommandError(f"--margin must be from 0 up to 1, not {margin}")
        checkpoint = get_version(version)
        current = active_checkpoint()
        if check_groups and current is not None and current.pk != checkpoint.pk:
            snapshot = report_snapshot(checkpoint)
            checked, losses = group_losses(checkpoint, current, snapshot, field, margin)
            words = verdict(checked, losses, margin, current.version)
            if losses:
                raise GroupsFall(f"v{version} not promoted: {words}")
            reason = f"{reason}; {words}" if reason else words
        promote(checkpoint, reason=reason, actor=command_actor("promote"))
        self.stdout.write(f"v{version} is active")
