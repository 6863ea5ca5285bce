"""manage.py validation_condition STUDY --source original|optimised|file: a validation study's
condition, its texts and provenance frozen."""

from pathlib import Path

from annotation.errors import ConditionError
from annotation.studies import lifecycle as studies
from annotation.validation import conditions
from core.commands import ServiceCommand
from scoring import validation


class Command(ServiceCommand):
    help = (
        "Add a condition to a validation study: the prompts as written (original), a version's "
        "optimiser's rewrites (optimised, --version or the active one) or rewrites from a "
        "CSV/JSONL file (file, --file). The first condition takes the version's flagged prompts."
    )

    def create_parser(self, prog_name, subcommand, **kwargs):
        """``--version`` names a registry version here, not Django's own version."""
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("study", help="the study's slug")
        parser.add_argument("--source", choices=["original", "optimised", "file"], required=True)
        parser.add_argument("--role", choices=["baseline", "treatment"], required=True)
        parser.add_argument("--name", help="default: the source (original, optimised, file)")
        parser.add_argument("--version", type=int, help="a registry version (default: active)")
        parser.add_argument("--file", help="the rewrites (--source file)")
        parser.add_argument("--seed", type=int, default=0)

    def handle(self, *args, study, source, role, name, version, file, seed, **options):
        found = studies.resolve(study)
        name = name or source
        if source == "file":
            if not file:
                raise ConditionError("--source file needs --file PATH")
            made = conditions.from_file(found, Path(file), name=name, role=role)
        else:
            prompts = conditions.study_prompts(found)
            if not prompts:
                _, prompts, _ = validation.flagged_prompts(version)
            if source == "original":
                made = conditions.original(found, prompts, name=name, role=role)
            else:
                made = validation.optimised(
                    found, prompts, version=version, name=name, role=role, seed=seed
                )
        self.stdout.write(f"condition {made.name} ({made.role}): {made.prompts.count()} prompts")
