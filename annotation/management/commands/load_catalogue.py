from django.core.management.base import BaseCommand

from annotation.catalogue import load_catalogue


class Command(BaseCommand):
    help = "Load the 40-occupation catalogue (idempotent); optionally placeholder items."

    def add_arguments(self, parser):
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
        created = load_catalogue(placeholders_per_prompt=placeholder_images)
        self.stdout.write(
            f"catalogue loaded: {created['occupations']} new occupations, "
            f"{created['prompts']} new prompts, {created['items']} new items"
        )
