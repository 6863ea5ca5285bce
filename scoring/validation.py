"""A validation study's conditions made by versions: the flagged prompts and the optimiser's
rewrites, with their scores, the threshold, the rewriter and the version, frozen.

The models and the plain conditions (as written, from a file) are
``annotation.validation.conditions``; this module adds what needs a scoring model:

* ``flagged_prompts``: the catalogue's original prompts a version flags
  (score below its threshold), with every prompt's score;
* ``optimised``: a version's optimiser run on each of the study's prompts
  (``training.ml.optimise``, the rewriter of ``SCORING["REWRITER"]``); the
  condition's text is the best passing rewrite, or the best one when none
  passes (said in its provenance), or the prompt itself when no rewrite kept
  the occupation. Two checkpoints' optimisers are two such conditions;
* ``from_active_version``: the validation study of ``create_study --kind
  validation``: the active version's flagged prompts as written (baseline) and
  as it optimises them (treatment), with placeholder images and their blinded tasks
  when asked, one attention check and one gold task per occupation among them
  (``annotation.validation.building``).
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction

from annotation.models import Prompt, Study
from annotation.models.validation import Condition
from annotation.validation import building as validation_tasks
from annotation.validation import conditions, generation
from scoring.errors import RewriterFailed, ScoringError
from scoring.scorer import LoadedVersion, get_scorer
from scoring.services import check_version, limits, make_rewriter
from training.errors import ml_refusals


def flagged_prompts(version: int | None = None) -> tuple[LoadedVersion, list[Prompt], dict]:
    """The version (default: active), its flagged original prompts and ``{prompt id: score}``."""
    loaded = get_scorer().get(check_version(version))
    prompts = list(Prompt.objects.filter(origin__isnull=True).select_related("occupation"))
    if not prompts:
        raise ScoringError("the catalogue has no prompts: load it first (load_catalogue)")
    scores = loaded.score([p.text for p in prompts])
    flags = loaded.flags(scores)
    flagged = [p for p, f in zip(prompts, flags, strict=True) if f]
    return loaded, flagged, {p.pk: float(s) for p, s in zip(prompts, scores, strict=True)}


def optimised(
    study: Study,
    prompts: Iterable[Prompt],
    *,
    version: int | None = None,
    name: str = "optimised",
    role: str = Condition.Role.TREATMENT,
    seed: int = 0,
) -> Condition:
    """A condition of ``version``'s optimiser's rewrites of ``prompts`` (see the module)."""
    from training.ml.optimise import optimise

    prompts = conditions.check_prompts(prompts)
    loaded = get_scorer().get(check_version(version))
    rewriter = make_rewriter()
    texts = []
    try:
        with ml_refusals(RewriterFailed, f"the {rewriter.name} rewriter failed: "):
            for prompt in prompts:
                result = optimise(
                    prompt.text,
                    prompt.occupation.name,
                    loaded.score,
                    loaded.threshold,
                    rewriter,
                    n=1,
                    rounds=limits()["OPTIMISE_ROUNDS"],
                    per_round=limits()["OPTIMISE_PER_ROUND"],
                    seed=seed,
                )
                chosen = (
                    result.candidates[0] if result.candidates else result.best or result.original
                )
                texts.append(
                    conditions.Text(
                        prompt,
                        chosen.text,
                        chosen.score,
                        {
                            "original_score": result.original.score,
                            "gain": chosen.score - result.original.score,
                            "passed": not chosen.flagged,
                            "aspects": list(chosen.aspects),
                            "rounds": result.rounds,
                            "tried": result.tried,
                        },
                    )
                )
    finally:
        if hasattr(rewriter, "close"):
            rewriter.close()
    return conditions.add_condition(
        study,
        name,
        role,
        Condition.Source.OPTIMISED,
        texts,
        version=loaded.version,
        provenance={
            "rewriter": rewriter.name,
            "threshold": loaded.threshold,
            "threshold_basis": loaded.threshold_basis,
            "encoder": loaded.encoder.label,
            "seed": seed,
        },
    )


@transaction.atomic
def from_active_version(study: Study, *, placeholder_images: int = 0, seed: int = 0) -> dict:
    """The active version's flagged prompts, as written and optimised, with placeholder images
    (``placeholder_images`` per prompt and condition; 0: none)."""
    loaded, flagged, scores = flagged_prompts()
    if not flagged:
        raise ScoringError(
            f"version {loaded.version} flags none of the catalogue's prompts: nothing to validate"
        )
    conditions.original(study, flagged, scores=scores, version=loaded.version)
    optimised(study, flagged, version=loaded.version, seed=seed)
    images, built = 0, {"tasks": 0, "gold": 0}
    if placeholder_images:
        images = generation.placeholder_images(study, placeholder_images)["created"]
        built = validation_tasks.build_study_tasks(study, seed=seed)
    return {
        "version": loaded.version,
        "prompts": len(flagged),
        "images": images,
        **built,
    }
