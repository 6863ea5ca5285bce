from annotation.catalogue.loading import load_catalogue
from annotation.studies import lifecycle as studies
from core.commands import ServiceCommand


class Command(ServiceCommand):
    help = (
        "Load the 40-occupation catalogue (idempotent) with a study's consent text and "
        "instructions; optionally placeholder items in that study."
    )

    def add_arguments(self, parser):
        parser.add_argument("--study", metavar="SLUG", help="the study (default: the default one)")
        parser.add_argument(
            "--placeholder-images",
            nargs="?",
            type=int,
            const=10,
            default=0,
            metavar="N",
            help="create N placeholder items per original prompt (default 10)",
        )

    def handle(self, *args, placeholder_images, **options):
        study = studies.resolve(options["study"])
        created = load_catalogue(placeholders_per_prompt=placeholder_images, study=study)
        self.stdout.write(
            f"catalogue loaded: {created['occupations']} new occupations, "
            f"{created['prompts']} new prompts, {created['items']} new items"
        )
