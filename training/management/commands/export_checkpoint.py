from pathlib import Path

from core.commands import ServiceCommand
from training.services import export_checkpoint, get_version


class Command(ServiceCommand):
    help = "Write VERSION as the seed's .pth state dict or as a native checkpoint folder."

    def add_arguments(self, parser):
        parser.add_argument("version", type=int)
        parser.add_argument("--format", choices=["seed", "native"], default="seed")
        parser.add_argument("--out", type=Path, required=True)

    def handle(self, *args, version, format, out, **options):
        path = export_checkpoint(get_version(version), fmt=format, out=out)
        self.stdout.write(str(path))
