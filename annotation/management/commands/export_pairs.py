from urllib.parse import urlsplit

from annotation.access import log
from annotation.management.commands._output import write_lines
from annotation.models import Item
from annotation.rankings.exports import jsonl_lines, pair_rows
from annotation.studies import lifecycle as studies
from core.commands import ServiceCommand


def _absolute(url: str, base_url: str) -> str:
    """The storage's URL under ``base_url``, unless the storage gave a full one (S3)."""
    return url if urlsplit(url).scheme else base_url.rstrip("/") + url


class Command(ServiceCommand):
    help = (
        "Export a study's rankings that count as chosen/rejected pairs (JSONL with chosen, "
        "rejected and margin, as TRL's RewardTrainer reads them; item ids, image URLs, "
        "prompt types)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--study", metavar="SLUG", help="the study (default: the default one)")
        parser.add_argument("--out", help="file to write (default: standard output)")
        parser.add_argument("--include-synthetic", action="store_true")
        parser.add_argument(
            "--keep-identical-texts",
            action="store_true",
            help="keep pairs of two images of one prompt (same chosen and rejected text)",
        )
        parser.add_argument(
            "--base-url",
            default="",
            help="prefix of the image URLs, e.g. https://stereorank.example.org (not of URLs "
            "that are already absolute: images on an object store)",
        )

    def handle(self, *args, out, include_synthetic, keep_identical_texts, base_url, **options):
        storage = Item._meta.get_field("image").storage
        study = studies.resolve(options["study"])
        what = f"pairs export (jsonl, with demographics, to {out or 'standard output'})"
        log.record(None, study, log.Surface.COMMAND, log.Action.EXPORT, what)
        rows = pair_rows(
            include_synthetic,
            keep_identical_texts=keep_identical_texts,
            image_url=lambda name: _absolute(storage.url(name), base_url),
            study=study,
        )
        written = write_lines(jsonl_lines(rows), out)
        hint = (
            ""
            if include_synthetic
            else " (synthetic annotators' rankings need --include-synthetic)"
        )
        self.stderr.write(f"{written} pairs written to {out or 'standard output'}{hint}")
