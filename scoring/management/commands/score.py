"""manage.py score "prompt" ... [--version V] [--group FIELD:VALUE] [--json]: score prompts
with a version, by its pooled head or one group's."""

import json

from core.commands import ServiceCommand
from scoring import services
from scoring.api import score_body
from scoring.serving import FP32


class Command(ServiceCommand):
    help = "Score prompts with the active version (or --version); flag those below its threshold."

    def create_parser(self, prog_name, subcommand, **kwargs):
        """``--version`` names a registry version here, not Django's own version."""
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("prompts", nargs="+", help="Prompts to score.")
        parser.add_argument("--version", type=int, help="A registry version (default: active).")
        parser.add_argument(
            "--group",
            metavar="FIELD:VALUE",
            help="Answer from that group's head (a version trained with --groups FIELD).",
        )
        parser.add_argument("--json", action="store_true", help="Print the API's JSON.")

    def handle(self, *args, **options):
        report = services.score_prompts(options["prompts"], options["version"], options["group"])
        if options["json"]:
            self.stdout.write(json.dumps(score_body(report)))
            return
        served = report.encoder
        said = ""  # the plain fp32 deployment's line is as it always was
        if served != FP32:
            said = f", encoder {served.label}" + (" (fp32 fallback)" if served.fallback else "")
        if report.group:
            said += f", the head of {report.group}"
        self.stdout.write(
            f"v{report.version}, threshold {report.threshold:.4f} ({report.threshold_basis}){said}"
        )
        for r in report.results:
            flag = "stereotypical" if r.flagged else "ok"
            self.stdout.write(f"{r.score:8.4f}  {flag:13}  {r.prompt}")
            if r.contested:
                self.stdout.write(
                    f"{'':8}  people disagree about this prompt (spread {r.disagreement:.3f} > "
                    f"{report.disagreement_threshold:.3f})"
                )
