from pathlib import Path

from core.commands import ServiceCommand
from training.management.commands._common import command_actor, get_snapshot
from training.services import import_checkpoint


class Command(ServiceCommand):
    help = (
        "Register a seed .pth (checked against the encoder's weights) or a native checkpoint "
        "folder as a new candidate version; prints the version, and says which threshold it "
        "got."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--format", choices=["seed", "native"], default="seed")
        parser.add_argument("--encoder", help="The .pth's encoder (default: settings).")
        parser.add_argument(
            "--threshold",
            type=float,
            help="a seed .pth's threshold (default: the model card beside it, v1.pth -> "
            "v1.md, else the seed's 0.12)",
        )
        parser.add_argument(
            "--calibrate-on",
            type=int,
            metavar="SNAPSHOT",
            help="calibrate its threshold on this snapshot's train split and measure its "
            "flag on the eval split, as a run's",
        )

    def handle(self, *args, path, format, encoder, threshold, calibrate_on, **options):
        checkpoint = import_checkpoint(
            path,
            fmt=format,
            encoder=encoder,
            actor=command_actor("import_checkpoint"),
            threshold=threshold,
            calibrate_on=get_snapshot(calibrate_on) if calibrate_on is not None else None,
        )
        self.stderr.write(
            f"v{checkpoint.version}: threshold {checkpoint.threshold:g} "
            f"({checkpoint.threshold_basis})"
        )
        self.stdout.write(str(checkpoint.version))
