import os
import sys
import uuid
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.exports import csv_lines, jsonl_lines, ranking_rows


class Command(BaseCommand):
    help = "Export rankings joined with pseudonymous annotators' demographics."

    def add_arguments(self, parser):
        parser.add_argument("--format", choices=["jsonl", "csv"], default="jsonl")
        parser.add_argument("--out", help="file to write (default: standard output)")
        parser.add_argument("--include-synthetic", action="store_true")

    def handle(self, *args, format, out, include_synthetic, **options):
        render = {"jsonl": jsonl_lines, "csv": csv_lines}[format]
        lines = render(ranking_rows(include_synthetic))
        if not out:
            sys.stdout.writelines(lines)
            return
        target = Path(out)
        if not target.parent.is_dir():
            raise CommandError(f"cannot write {out}: folder {target.parent} does not exist")
        # Write beside the target, then rename: a failed export leaves no half file.
        tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
        try:
            with open(tmp, "w", encoding="utf-8", newline="") as handle:
                handle.writelines(lines)
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
