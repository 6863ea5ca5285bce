from annotation.models import Study
from annotation.studies import lifecycle as studies
from core.commands import ServiceCommand


class Command(ServiceCommand):
    help = (
        "Move a study through its lifecycle: draft -> open -> closed -> open or archived "
        "(closed: nobody new joins, those who started may finish; archived: kept for its data)."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("status", choices=[s for s in Study.Status.values if s != "draft"])

    def handle(self, *args, slug, status, **options):
        study = studies.transition(studies.resolve(slug), status)
        self.stdout.write(f"study {study.slug} is {study.status}")
