from annotation import studies
from annotation.models import Study
from core.commands import ServiceCommand


class Command(ServiceCommand):
    help = (
        "Create a study (a draft until opened with study_status SLUG open): its entry link "
        "is /join/SLUG/; it owns its items, tasks, consent, instructions and participants."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--kind", choices=Study.Kind.values, default=Study.Kind.COLLECTION)
        parser.add_argument("--name", default="", help="default: the slug")
        parser.add_argument("--task-size", type=int, help="items per task (default: TASK_SIZE)")
        parser.add_argument("--overlap", type=int, help="rankings per task (default: TASK_OVERLAP)")
        parser.add_argument(
            "--platform", choices=Study.Platform.values, default=Study.Platform.GENERIC
        )

    def handle(self, *args, slug, kind, name, task_size, overlap, platform, **options):
        study = studies.create_study(
            slug, kind, name=name, task_size=task_size, overlap=overlap, platform=platform
        )
        self.stdout.write(f"study {study.slug} created ({study.kind}, {study.status})")
