import json

from django.conf import settings
from django.core.management.base import CommandError

from annotation.studies import lifecycle as studies
from core.commands import ServiceCommand


class Command(ServiceCommand):
    help = (
        "A validation study's report: per condition n, mean rank and SD (higher = less "
        "stereotypical), Welch's t (the card's test), paired t, Wilcoxon, the cluster "
        "bootstrap, effect sizes, per occupation and group, power; each with its 95%% interval. "
        "--json adds each annotator's mean rank per condition under their pseudonym."
    )

    def add_arguments(self, parser):
        parser.add_argument("study", help="the study's slug")
        parser.add_argument("--json", action="store_true", help="the report as JSON")
        parser.add_argument(
            "--n-boot", type=int, default=settings.STEREORANK["QUALITY_N_BOOT"], metavar="N"
        )
        parser.add_argument("--seed", type=int, default=0)

    def handle(self, *args, study, n_boot, seed, **options):
        from annotation.validation import results as validation_results  # scipy: only when run

        if n_boot < 0:
            raise CommandError("--n-boot must be 0 or more")
        report = validation_results.report(studies.resolve(study), n_boot=n_boot, seed=seed)
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2))
        else:
            self.stdout.write("\n".join(validation_results.lines(report)))
