from annotation.access import log
from annotation.management.commands._output import write_lines
from annotation.rankings.exports import csv_lines, jsonl_lines, ranking_rows
from annotation.studies import lifecycle as studies
from core.commands import ServiceCommand


class Command(ServiceCommand):
    help = (
        "Export a study's rankings that count, joined with pseudonymous annotators' demographics, "
        "their status and the gold/check flags (--include-left-out: gold tasks and excluded "
        "annotators' rankings too)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--study", metavar="SLUG", help="the study (default: the default one)")
        parser.add_argument("--format", choices=["jsonl", "csv"], default="jsonl")
        parser.add_argument("--out", help="file to write (default: standard output)")
        parser.add_argument("--include-synthetic", action="store_true")
        parser.add_argument("--include-left-out", action="store_true")

    def handle(self, *args, format, out, include_synthetic, include_left_out, **options):
        render = {"jsonl": jsonl_lines, "csv": csv_lines}[format]
        study = studies.resolve(options["study"])
        what = f"rankings export ({format}, with demographics, to {out or 'standard output'})"
        log.record(None, study, log.Surface.COMMAND, log.Action.EXPORT, what)
        write_lines(render(ranking_rows(include_synthetic, include_left_out, study)), out)
