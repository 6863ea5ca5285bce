from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from annotation.tasks_builder import build_tasks


class Command(BaseCommand):
    help = "Build ranking tasks from the items not yet in a task (idempotent)."

    def add_arguments(self, parser):
        parser.add_argument("--size", type=int, default=settings.STEREORANK["TASK_SIZE"])
        parser.add_argument("--overlap", type=int, default=settings.STEREORANK["TASK_OVERLAP"])
        parser.add_argument("--seed", type=int, default=0)

    def handle(self, *args, size, overlap, seed, **options):
        if size < 2 or overlap < 1:
            raise CommandError("--size must be at least 2 and --overlap at least 1")
        made = build_tasks(size=size, overlap=overlap, seed=seed)
        self.stdout.write(f"{made} tasks built")
