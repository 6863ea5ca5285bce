from django.conf import settings
from django.core.management.base import CommandError
from django.db import transaction

from annotation.models.studies import question_refusal
from annotation.studies import lifecycle as studies
from annotation.studies.tasks_builder import build_study_tasks
from core.commands import ServiceCommand


class Command(ServiceCommand):
    help = (
        "Build a study's ranking tasks from its items not yet in a task (idempotent): a "
        "fraction of them (the agreement subset) ranked by several annotators; then top every "
        "occupation up to the study's gold and attention-check tasks (1 each unless the study "
        "says otherwise). A count given here is recorded on the study; 0 turns a kind off and "
        "needs --quality-off-reason."
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
        parser.add_argument(
            "--gold-per-occupation",
            type=int,
            metavar="N",
            help="gold tasks per occupation (default: the study's, 1 unless changed); "
            "recorded on the study; 0 turns them off (with --quality-off-reason)",
        )
        parser.add_argument(
            "--checks-per-occupation",
            type=int,
            metavar="N",
            help="attention-check tasks per occupation (default: the study's, 1 unless "
            "changed); recorded on the study; 0 turns them off (with --quality-off-reason)",
        )
        parser.add_argument(
            "--quality-off-reason",
            metavar="TEXT",
            help="why gold or attention-check tasks are off, recorded on the study",
        )
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
        if problem := question_refusal(study.question_format, size, study.question_k):
            raise CommandError(f"--size {size} does not fit study {study.slug}: {problem}")
        gold, checks = options["gold_per_occupation"], options["checks_per_occupation"]
        reason = options["quality_off_reason"]
        if (gold or 0) < 0 or (checks or 0) < 0:
            raise CommandError("--gold-per-occupation and --checks-per-occupation must be >= 0")
        self._refuse_off_without_reason(study, gold, checks, reason)
        with transaction.atomic():  # the settings recorded with the tasks, or neither
            if (gold, checks, reason) != (None, None, None):
                studies.set_quality(
                    study, gold_per_occupation=gold, checks_per_occupation=checks, reason=reason
                )
            made = build_study_tasks(
                study, size, overlap, seed, agreement_fraction, agreement_overlap
            )
        self.stdout.write(f"{made['tasks']} tasks built")
        off = studies.quality_off(study.gold_per_occupation, study.checks_per_occupation)
        if "gold tasks" not in off:
            self.stdout.write(f"{made['gold']} gold tasks built")
        if "attention-check tasks" not in off:
            self.stdout.write(f"{made['checks']} attention-check tasks built")
        if off:
            self.stdout.write(f"{' and '.join(off)} off: {study.quality_off_reason}")

    @staticmethod
    def _refuse_off_without_reason(study, gold, checks, reason) -> None:
        """A count of 0 with no reason, given or recorded: one line naming the flags."""
        given = (("gold", gold), ("checks", checks))
        gold, checks, why = studies.planned_quality(study, gold, checks, reason)
        off = studies.quality_off(gold, checks)
        if off and not why:
            flags = " and ".join(f"--{kind}-per-occupation 0" for kind, n in given if n == 0)
            raise CommandError(
                f"{flags or 'this'} turns {' and '.join(off)} off: say why with "
                "--quality-off-reason TEXT (recorded on the study)"
            )
