"""A validation study without a scoring model, for the tests of several areas: the catalogue's
stereotypical prompts as written and rewritten (from a file, or named as a version's
optimiser), placeholder images, blinded tasks."""

from pathlib import Path

from annotation.catalogue.loading import load_catalogue
from annotation.models import Prompt, Study
from annotation.models.validation import Condition
from annotation.validation import building as validation_tasks
from annotation.validation import conditions, generation


def make_validation_study(
    folder: Path,
    slug: str = "val",
    occupations: int = 6,
    images: int = 3,
    version: int | None = None,
    placeholders: bool = True,
) -> Study:
    """``occupations`` stereotypical prompts, ``images`` placeholders per prompt and
    condition: one task of 2 x ``images`` per occupation. With ``version``, the treatment
    is recorded as that version's optimiser (texts given here, no model run)."""
    load_catalogue()
    study = Study.objects.create(
        slug=slug,
        name=f"Validation {slug}",
        platform="generic",
        kind="validation",
        task_size=2 * images,
    )
    prompts = list(
        Prompt.objects.filter(origin__isnull=True, prompt_type="stereotypical").order_by("pk")
    )[:occupations]
    conditions.original(study, prompts)
    if version is None:
        rewrites = folder / f"{slug}-rewrites.csv"
        rewrites.write_text(
            "prompt,rewrite\n"
            + "".join(f'"{p.text}","{p.text}, an older woman"\n' for p in prompts)
        )
        conditions.from_file(study, rewrites, name="optimised")
    else:
        conditions.add_condition(
            study,
            "optimised",
            Condition.Role.TREATMENT,
            Condition.Source.OPTIMISED,
            [conditions.Text(p, f"{p.text}, an older woman", 0.5) for p in prompts],
            version=version,
            provenance={"rewriter": "test"},
        )
    if placeholders:
        generation.placeholder_images(study, images)
        validation_tasks.build_validation_tasks(study)
    return study
