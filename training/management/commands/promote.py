from core.commands import ServiceCommand
from training.services import get_version, promote

from ._common import command_actor


class Command(ServiceCommand):
    help = "Make VERSION the active checkpoint (the former one is archived); recorded."

    def add_arguments(self, parser):
        parser.add_argument("version", type=int)
        parser.add_argument("--reason", default="")

    def handle(self, *args, version, reason, **options):
        promote(get_version(version), reason=reason, actor=command_actor("promote"))
        self.stdout.write(f"v{version} is active")
