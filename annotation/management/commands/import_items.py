from django.core.management.base import CommandError

from annotation.catalogue.importing import ManifestError, import_manifest
from annotation.studies import lifecycle as studies
from core.commands import ServiceCommand


class Command(ServiceCommand):
    help = (
        "Import a study's items from a folder with manifest.jsonl/manifest.csv, or a CSV/JSONL "
        "manifest (columns prompt, occupation, prompt_type, image, optional generator JSON). "
        "All rows are validated first; nothing is imported if any row is bad."
    )

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--study", metavar="SLUG", help="the study (default: the default one)")

    def handle(self, *args, path, **options):
        study = studies.resolve(options["study"])
        try:
            counts = import_manifest(path, study)
        except ManifestError as exc:
            for error in exc.errors:
                self.stderr.write(error)
            raise CommandError(
                f"{len(exc.errors)} problem(s) in {path}; nothing was imported"
            ) from exc
        self.stdout.write(
            f"{counts['created']} items imported, {counts['skipped']} already present"
        )
