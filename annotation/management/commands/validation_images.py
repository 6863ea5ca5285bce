from pathlib import Path

from annotation.studies import lifecycle as studies
from annotation.validation import building as validation_tasks
from annotation.validation import generation
from core.commands import ServiceCommand


class Command(ServiceCommand):
    help = (
        "A validation study's images: write the generation manifest (--manifest OUT, .jsonl or "
        ".csv), import the generated images back (--import MANIFEST, all or nothing), or make "
        "placeholder images (--placeholders N per prompt and condition), or build the blinded "
        "tasks (--build-tasks)."
    )

    def add_arguments(self, parser):
        parser.add_argument("study", help="the study's slug")
        action = parser.add_mutually_exclusive_group(required=True)
        action.add_argument("--manifest", metavar="OUT")
        action.add_argument("--import", dest="manifest_in", metavar="MANIFEST")
        action.add_argument("--placeholders", type=int, metavar="N")
        action.add_argument(
            "--build-tasks",
            action="store_true",
            help="blinded tasks of the images not yet in one (K/2 of each condition)",
        )
        parser.add_argument(
            "--checks-per-occupation",
            type=int,
            help="attention-check tasks per occupation (--build-tasks; default: the "
            "study's, 1 unless turned off)",
        )
        parser.add_argument(
            "--gold-per-occupation",
            type=int,
            help="gold tasks per occupation (--build-tasks; default: the study's, 1 unless "
            "turned off)",
        )
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--condition", help="only this condition's rows (--manifest)")
        parser.add_argument("--images-per-prompt", type=int, default=3)
        parser.add_argument("--first-seed", type=int, default=0)

    def handle(self, *args, study, manifest, manifest_in, placeholders, **options):
        found = studies.resolve(study)
        if manifest:
            rows = generation.manifest_rows(
                found,
                images_per_prompt=options["images_per_prompt"],
                condition=options["condition"],
                first_seed=options["first_seed"],
            )
            fmt = "csv" if manifest.lower().endswith(".csv") else "jsonl"
            Path(manifest).write_text(generation.write_manifest(rows, fmt), encoding="utf-8")
            self.stdout.write(f"{len(rows)} images to generate, listed in {manifest}")
            return
        if options["build_tasks"]:
            made = validation_tasks.build_study_tasks(
                found,
                seed=options["seed"],
                checks=options["checks_per_occupation"],
                gold=options["gold_per_occupation"],
            )
            self.stdout.write(
                f"{made['tasks']} validation tasks and {made['gold']} gold tasks built"
            )
            return
        if manifest_in:
            counts = generation.import_images(found, Path(manifest_in))
        else:
            counts = generation.placeholder_images(found, placeholders)
        self.stdout.write(
            f"{counts['created']} images imported, {counts['skipped']} already present"
        )
