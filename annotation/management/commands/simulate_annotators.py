from django.core.management.base import BaseCommand, CommandError

from annotation.simulation import PLANTED, simulate


class Command(BaseCommand):
    help = (
        "Create synthetic annotators (flagged is_synthetic) with plausible demographics and "
        "rankings drawn from the latent model in annotation/simulation.py; seeded."
    )

    def add_arguments(self, parser):
        parser.add_argument("--count", type=int, default=20)
        parser.add_argument("--tasks-per-annotator", type=int, default=5)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument(
            "--planted",
            action="store_true",
            help="Age groups that disagree by design (simulation.PLANTED), to check reports.",
        )

    def handle(self, *args, count, tasks_per_annotator, seed, planted, **options):
        if count < 0 or tasks_per_annotator < 0:
            raise CommandError("--count and --tasks-per-annotator must not be negative")
        result = simulate(count, tasks_per_annotator, seed, PLANTED if planted else None)
        self.stdout.write(
            f"{result['annotators']} synthetic annotators created, "
            f"{result['rankings']} rankings stored"
        )
