from pathlib import Path

from core.commands import ServiceCommand
from training.services import get_version, model_card


class Command(ServiceCommand):
    help = (
        "Write VERSION's model card (Hugging Face format: YAML front matter, then Markdown) "
        "to stdout or --out FILE."
    )

    def add_arguments(self, parser):
        parser.add_argument("version", type=int)
        parser.add_argument("--out", type=Path, help="Write the card here instead of stdout.")

    def handle(self, *args, version, out, **options):
        card = model_card(get_version(version))
        if out is None:
            self.stdout.write(card, ending="")
            return
        out.write_text(card, encoding="utf-8")
        self.stdout.write(str(out))
