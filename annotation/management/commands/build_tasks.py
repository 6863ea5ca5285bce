from django.conf import settings
from django.core.management.base import CommandError

from annotation import studies
from annotation.tasks_builder import build_check_tasks, build_gold_tasks, build_tasks
from core.commands import ServiceCommand


class Command(ServiceCommand):
    help = (
        "Build a study's ranking tasks from its items not yet in a task (idempotent): a "
        "fraction of them (the agreement subset) ranked by several annotators; optionally top "
        "every occupation up to N gold tasks and N attention-check tasks."
    )

    def add_arguments(self, parser):
        study = settings.STEREORANK
        parser.add_argument("--study", metavar="SLUG", help="the study (default: the default one)")
        parser.add_argument(
            "--size", type=int, help="items per task (default: the study's, else TASK_SIZE)"
        )
        parser.add_argument(
            "--overlap",
            type=int,
            help="rankings per task (default: the study's, else TASK_OVERLAP)",
        )
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
        study = studies.resolve(options["study"])
        size = studies.task_size(study) if size is None else size
        overlap = studies.overlap(study) if overlap is None else overlap
        if size < 2 or overlap < 1 or agreement_overlap < 1:
            raise CommandError(
                "--size must be at least 2, --overlap and --agreement-overlap at least 1"
            )
        if not 0 <= agreement_fraction <= 1:
            raise CommandError("--agreement-fraction must be between 0 and 1")
        gold, checks = options["gold_per_occupation"], options["checks_per_occupation"]
        if gold < 0 or checks < 0:
            raise CommandError("--gold-per-occupation and --checks-per-occupation must be >= 0")
        made = build_tasks(size, overlap, seed, agreement_fraction, agreement_overlap, study)
        self.stdout.write(f"{made} tasks built")
        if gold:
            self.stdout.write(f"{build_gold_tasks(gold, size, seed, study)} gold tasks built")
        if checks:
            made = build_check_tasks(checks, size, seed, study)
            self.stdout.write(f"{made} attention-check tasks built")
