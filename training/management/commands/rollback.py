from core.commands import ServiceCommand
from training.management.commands._common import command_actor
from training.services import rollback


class Command(ServiceCommand):
    help = "Re-activate the version that was active before the current one; recorded."

    def add_arguments(self, parser):
        parser.add_argument("--reason", default="")

    def handle(self, *args, reason, **options):
        checkpoint = rollback(reason=reason, actor=command_actor("rollback"))
        self.stdout.write(f"v{checkpoint.version} is active")
