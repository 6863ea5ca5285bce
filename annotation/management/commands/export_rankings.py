import sys

from django.core.management.base import BaseCommand

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
        if out:
            with open(out, "w", encoding="utf-8", newline="") as handle:
                handle.writelines(lines)
        else:
            sys.stdout.writelines(lines)
