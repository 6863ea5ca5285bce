from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from annotation.tasks_builder import build_check_tasks, build_gold_tasks, build_tasks


class Command(BaseCommand):
    help = (
        "Build ranking tasks from the items not yet in a task (idempotent): a fraction of "
        "them (the agreement subset) ranked by several annotators; optionally top every "
        "occupation up to N gold tasks and N attention-check tasks."
    )

    def add_arguments(self, parser):
        study = settings.STEREORANK
        parser.add_argument("--size", type=int, default=study["TASK_SIZE"])
        parser.add_argument("--overlap", type=int, default=study["TASK_OVERLAP"])
        parser.add_argument(
            "--agreement-fraction",
            type=float,
            default=study["AGREEMENT_FRACTION"],
            help="share of the new tasks ranked by --agreement-overlap annotators",
        )
        parser.add_argument("--agreement-overlap", type=int, default=study["AGREEMENT_OVERLAP"])
        parser.add_argument("--gold-per-occupation", type=int, default=0)
        parser.add_argument("--checks-per-occupation", type=int, default=0)
        parser.add_argument("--seed", type=int, default=0)

    def handle(self, *args, size, overlap, agreement_fraction, agreement_overlap, seed, **options):
        if size < 2 or overlap < 1 or agreement_overlap < 1:
            raise CommandError(
                "--size must be at least 2, --overlap and --agreement-overlap at least 1"
            )
        if not 0 <= agreement_fraction <= 1:
            raise CommandError("--agreement-fraction must be between 0 and 1")
        gold, checks = options["gold_per_occupation"], options["checks_per_occupation"]
        if gold < 0 or checks < 0:
            raise CommandError("--gold-per-occupation and --checks-per-occupation must be >= 0")
        made = build_tasks(size, overlap, seed, agreement_fraction, agreement_overlap)
        self.stdout.write(f"{made} tasks built")
        if gold:
            self.stdout.write(f"{build_gold_tasks(gold, size, seed)} gold tasks built")
        if checks:
            made = build_check_tasks(checks, size, seed)
            self.stdout.write(f"{made} attention-check tasks built")
