from django.core.management.base import BaseCommand, CommandError

from annotation.importing import ManifestError, import_manifest


class Command(BaseCommand):
    help = (
        "Import items from a folder with manifest.jsonl/manifest.csv, or a CSV/JSONL manifest "
        "(columns prompt, occupation, prompt_type, image, optional generator JSON). "
        "All rows are validated first; nothing is imported if any row is bad."
    )

    def add_arguments(self, parser):
        parser.add_argument("path")

    def handle(self, *args, path, **options):
        try:
            counts = import_manifest(path)
        except ManifestError as exc:
            for error in exc.errors:
                self.stderr.write(error)
            raise CommandError(
                f"{len(exc.errors)} problem(s) in {path}; nothing was imported"
            ) from exc
        self.stdout.write(
            f"{counts['created']} items imported, {counts['skipped']} already present"
        )
