from django.core.management.base import CommandError

from annotation.studies import lifecycle as studies
from annotation.studies.simulation import PLANTED, simulate
from core.commands import ServiceCommand


class Command(ServiceCommand):
    help = (
        "Create synthetic annotators (flagged is_synthetic) with plausible demographics and "
        "rankings drawn from the latent model in annotation/studies/simulation.py, a fraction of "
        "them careless; seeded."
    )

    def add_arguments(self, parser):
        parser.add_argument("--study", metavar="SLUG", help="the study (default: the default one)")
        parser.add_argument("--count", type=int, default=20)
        parser.add_argument(
            "--tasks-per-annotator",
            type=int,
            help="default 5; in a validation study, every task of the study",
        )
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument(
            "--careless",
            type=float,
            default=0.0,
            metavar="FRACTION",
            help="share of careless annotators (random order, shown order, hurried; "
            "recorded as the profile's synthetic_kind)",
        )
        parser.add_argument(
            "--planted",
            action="store_true",
            help="Age groups that disagree by design (simulation.PLANTED), to check reports.",
        )
        parser.add_argument(
            "--effect",
            type=float,
            default=0.0,
            metavar="D",
            help="validation studies: how much the treatment's images are preferred (the "
            "log-odds of Plackett-Luce; 0, the default, is a null study)",
        )

    def handle(self, *args, count, tasks_per_annotator, seed, careless, planted, **options):
        study = studies.resolve(options["study"])
        validation = study.kind == study.Kind.VALIDATION
        if options["effect"] and not validation:
            raise CommandError("--effect is for validation studies")
        if tasks_per_annotator is None:
            tasks_per_annotator = study.tasks.filter(is_gold=False).count() if validation else 5
        if count < 0 or tasks_per_annotator < 0:
            raise CommandError("--count and --tasks-per-annotator must not be negative")
        if not 0 <= careless <= 1:
            raise CommandError("--careless must be a fraction between 0 and 1")
        result = simulate(
            count,
            tasks_per_annotator,
            seed,
            careless,
            PLANTED if planted else None,
            study=study,
            effect=options["effect"],
        )
        self.stdout.write(
            f"{result['annotators']} synthetic annotators created ({result['careless']} "
            f"careless), {result['rankings']} rankings stored; "
            f"{result['excluded']} excluded by the quality policy"
        )
