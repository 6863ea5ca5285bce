"""manage.py setup_schedule: create the default retraining schedule (disabled)."""

from django.core.management.base import CommandError

from core.commands import ServiceCommand
from training.ml.recipes import DEFAULT_RECIPE, choices
from training.schedules import ScheduleError, ensure_default_schedule


class Command(ServiceCommand):
    help = (
        "Create the periodic task that runs training.scheduled_retrain (hourly, disabled by "
        "default) so staff can enable and edit it in the admin. An existing one is left as is."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--every", type=int, default=60, help="Minutes between runs.")
        parser.add_argument("--enable", action="store_true", help="Enable it at once.")
        parser.add_argument(
            "--recipe",
            default="",
            help=f"The training recipe its runs start from "
            f"({', '.join(name for name, _ in choices())}); default: {DEFAULT_RECIPE}.",
        )

    def handle(self, *args, **options) -> None:
        try:
            task, created = ensure_default_schedule(
                options["every"], options["enable"], options["recipe"]
            )
        except ScheduleError as error:
            raise CommandError(str(error)) from error
        state = "enabled" if task.enabled else "disabled"
        verb = "created" if created else "already exists, left unchanged"
        self.stdout.write(f"Schedule '{task.name}' {verb} ({state}, {task.interval}).")
