from annotation.studies import lifecycle as studies
from core.commands import ServiceCommand
from training import image_generation


class Command(ServiceCommand):
    help = (
        "Generate a validation study's images with the configured OpenAI-compatible images "
        "endpoint (STEREORANK_IMAGES_*; none by default), on the default queue or here (--now)."
    )

    def add_arguments(self, parser):
        parser.add_argument("study", help="the study's slug")
        parser.add_argument("--images-per-prompt", type=int, default=3)
        parser.add_argument("--now", action="store_true", help="generate here, not on a worker")

    def handle(self, *args, study, images_per_prompt, now, **options):
        found = studies.resolve(study)
        if now:
            counts = image_generation.generate_images(found.pk, images_per_prompt)
            self.stdout.write(
                f"{counts['created']} images generated, {counts['skipped']} already present"
            )
            return
        image_generation.request_images(found, images_per_prompt)
        self.stdout.write(f"image generation for {found.slug} queued on the default queue")
