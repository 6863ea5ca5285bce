"""manage.py optimise "prompt" [--n N] [--occupation O] [--version V] [--json]: DJ-PO rewrites."""

import json

from core.commands import ServiceCommand
from scoring import services
from scoring.api import optimise_body


class Command(ServiceCommand):
    help = (
        "Rewrite a prompt until the reward model passes it (DJ-PO): up to N rewrites that keep "
        "its occupation and score at or above the threshold."
    )

    def create_parser(self, prog_name, subcommand, **kwargs):
        """``--version`` names a registry version here, not Django's own version."""
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("prompt")
        parser.add_argument("--n", type=int, default=3, help="Rewrites wanted (default 3).")
        parser.add_argument("--occupation", help="Default: the catalogue occupation it names.")
        parser.add_argument("--version", type=int, help="A registry version (default: active).")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--json", action="store_true", help="Print the API's JSON.")

    def handle(self, *args, **options):
        report = services.optimise_prompt(
            options["prompt"],
            options["n"],
            options["occupation"],
            options["version"],
            options["seed"],
        )
        if options["json"]:
            self.stdout.write(json.dumps(optimise_body(report)))
            return
        result = report.result
        self.stdout.write(
            f"v{report.version}, threshold {report.threshold:.4f} ({report.threshold_basis}); "
            f"occupation {report.occupation!r}, {report.rewriter} rewriter"
        )
        verdict = "stereotypical" if result.original.flagged else "ok"
        self.stdout.write(f"{result.original.score:8.4f}  {verdict:13}  {result.original.text}")
        if report.contested:
            self.stdout.write(
                f"{'':8}  people disagree about this prompt (spread {report.disagreement:.3f}): "
                "one score averages their views"
            )
        rewrites = [c for c in result.candidates if c.round > 0]
        if not result.original.flagged:
            self.stdout.write("It already passes the threshold: nothing to rewrite.")
        elif not rewrites:
            self.stdout.write(
                f"No rewrite passed in {result.rounds} rounds ({result.tried} tried)"
                + (f"; best {result.best.score:.4f}: {result.best.text}" if result.best else "")
            )
        for c in rewrites:
            self.stdout.write(f"{c.score:8.4f}  {c.gain:+.4f}  {', '.join(c.aspects):30}  {c.text}")
