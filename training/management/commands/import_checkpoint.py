from pathlib import Path

from django.core.management.base import BaseCommand

from training.services import import_checkpoint

from ._common import service_errors


class Command(BaseCommand):
    help = (
        "Register a seed .pth (checked against the encoder's weights) or a native checkpoint "
        "folder as a new candidate version; prints the version."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--format", choices=["seed", "native"], default="seed")
        parser.add_argument("--encoder", help="The .pth's encoder (default: settings).")

    def handle(self, *args, path, format, encoder, **options):
        with service_errors():
            checkpoint = import_checkpoint(path, fmt=format, encoder=encoder, user=None)
        self.stdout.write(str(checkpoint.version))
