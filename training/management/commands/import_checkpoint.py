from pathlib import Path

from core.commands import ServiceCommand
from training.management.commands._common import command_actor
from training.services import import_checkpoint


class Command(ServiceCommand):
    help = (
        "Register a seed .pth (checked against the encoder's weights) or a native checkpoint "
        "folder as a new candidate version; prints the version."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--format", choices=["seed", "native"], default="seed")
        parser.add_argument("--encoder", help="The .pth's encoder (default: settings).")

    def handle(self, *args, path, format, encoder, **options):
        checkpoint = import_checkpoint(
            path, fmt=format, encoder=encoder, actor=command_actor("import_checkpoint")
        )
        self.stdout.write(str(checkpoint.version))
