"""A validation study's conditions: the prompts it judges, each condition's texts, frozen.

A condition is written once, whole, with its texts and provenance
(``add_condition``); the first one of a study fixes its prompts (original
catalogue prompts) and the second must name the same ones, so that every task
can show both conditions of one occupation in equal numbers. ``original``
keeps the prompts as written; ``from_file`` reads rewrites from a CSV/JSONL
file (``prompt``: the original text, ``rewrite``: the condition's text). The
optimiser's conditions are built in ``scoring.validation``, which calls
``add_condition``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction
from django.dispatch import Signal

from annotation.catalogue.importing import read_rows
from annotation.errors import ConditionError
from annotation.models import Prompt, Study
from annotation.models.validation import Condition, ConditionPrompt

# Sent by ``from_active_version`` inside its transaction with ``study`` and
# ``placeholder_images``; the scoring app's receiver (``scoring.apps``) writes the
# conditions from the active version's optimiser and returns what it made. Annotation
# cannot import the optimiser (layers), so the study's creation reaches it this way.
validation_study_requested = Signal()


@dataclass(frozen=True)
class Text:
    """One prompt's text in a condition, with its score and provenance."""

    prompt: Prompt
    text: str
    score: float | None = None
    provenance: dict = field(default_factory=dict)


def study_prompts(study: Study) -> list[Prompt]:
    """The original prompts a study judges (those of its first condition), by id."""
    first = study.conditions.order_by("created_at", "pk").first()
    if first is None:
        return []
    return [
        cp.prompt for cp in first.prompts.select_related("prompt__occupation").order_by("prompt_id")
    ]


def check_prompts(prompts: Iterable[Prompt]) -> list[Prompt]:
    """Original prompts, at least one, each once."""
    prompts = list(prompts)
    if not prompts:
        raise ConditionError("no prompts: a validation study needs at least one prompt to judge")
    if len({p.pk for p in prompts}) != len(prompts):
        raise ConditionError("a prompt is named twice")
    paraphrases = [p.text for p in prompts if p.origin_id is not None]
    if paraphrases:
        raise ConditionError(f"{paraphrases[0]!r} is a paraphrase; name original prompts")
    return prompts


@transaction.atomic
def add_condition(
    study: Study,
    name: str,
    role: str,
    source: str,
    texts: list[Text],
    *,
    version: int | None = None,
    provenance: dict | None = None,
) -> Condition:
    """Write a condition and its texts, all or nothing (see the module docstring)."""
    if study.kind != Study.Kind.VALIDATION:
        raise ConditionError(f"study {study.slug} is a {study.kind} study, not a validation one")
    if role not in Condition.Role.values:
        raise ConditionError(f"role {role!r}: use {' or '.join(Condition.Role.values)}")
    if study.conditions.filter(role=role).exists():
        raise ConditionError(f"study {study.slug} has a {role} condition already")
    if study.conditions.filter(name=name).exists():
        raise ConditionError(f"study {study.slug} has a condition named {name!r} already")
    prompts = check_prompts(t.prompt for t in texts)
    fixed = study_prompts(study)
    if fixed and {p.pk for p in fixed} != {p.pk for p in prompts}:
        raise ConditionError(
            f"condition {name!r} names {len(prompts)} prompts, not the study's {len(fixed)}: "
            "both conditions judge the same prompts"
        )
    blank = [t.prompt.text for t in texts if not t.text.strip()]
    if blank:
        raise ConditionError(f"condition {name!r} has no text for {blank[0]!r}")
    condition = Condition.objects.create(
        study=study,
        name=name,
        role=role,
        source=source,
        version=version,
        provenance=provenance or {},
    )
    ConditionPrompt.objects.bulk_create(
        ConditionPrompt(
            condition=condition,
            prompt=t.prompt,
            text=t.text.strip(),
            score=t.score,
            provenance=t.provenance,
        )
        for t in texts
    )
    return condition


def original(
    study: Study,
    prompts: Iterable[Prompt],
    *,
    name: str = "original",
    role: str = Condition.Role.BASELINE,
    scores: dict[int, float] | None = None,
    version: int | None = None,
) -> Condition:
    """The prompts as written (with a version's scores of them, when given)."""
    scores = scores or {}
    texts = [Text(p, p.text, scores.get(p.pk)) for p in check_prompts(prompts)]
    provenance = {"scored_by_version": version} if version else {}
    return add_condition(study, name, role, Condition.Source.ORIGINAL, texts, provenance=provenance)


def from_file(
    study: Study,
    path: Path,
    *,
    name: str,
    role: str = Condition.Role.TREATMENT,
) -> Condition:
    """Rewrites given in a CSV/JSONL file (``prompt``: an original prompt's text or id,
    ``rewrite``: this condition's text); every row is checked before anything is written."""
    path = Path(path)
    if not path.is_file():
        raise ConditionError(f"{path}: no such file")
    fixed = study_prompts(study)
    candidates = fixed or list(Prompt.objects.filter(origin__isnull=True))
    by_text = {p.text.strip().lower(): p for p in candidates}
    by_id = {str(p.pk): p for p in candidates}
    texts, errors = [], []
    for number, raw, problem in read_rows(path):
        where = f"row {number}"
        if problem:
            errors.append(f"{where}: {problem}")
            continue
        key = str(raw.get("prompt") or raw.get("prompt_id") or "").strip()
        rewrite = str(raw.get("rewrite") or "").strip()
        prompt = by_id.get(key) or by_text.get(key.lower())
        if prompt is None:
            errors.append(f"{where}: {key!r} is not a prompt of study {study.slug}")
        elif not rewrite:
            errors.append(f"{where}: no rewrite")
        else:
            texts.append(Text(prompt, rewrite, provenance={"row": number}))
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise ConditionError(f"{path.name}: {errors[0]}{more}; nothing was written")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return add_condition(
        study,
        name,
        role,
        Condition.Source.FILE,
        texts,
        provenance={"file": path.name, "sha256": digest},
    )


@transaction.atomic
def from_active_version(study: Study, *, placeholder_images: int = 0) -> dict:
    """The active version's flagged prompts as written and as its optimiser rewrites them
    (``scoring.validation.from_active_version``), with ``placeholder_images`` per prompt
    and condition and their tasks when asked; what ``create_study --kind validation``
    calls. ``{"version", "prompts", "images", "tasks"}``."""
    if study.kind != Study.Kind.VALIDATION:
        raise ConditionError(f"study {study.slug} is a {study.kind} study, not a validation one")
    answers = validation_study_requested.send(
        sender=Study, study=study, placeholder_images=placeholder_images
    )
    if not answers:
        raise ConditionError(
            "no optimiser to make the conditions: the scoring app is not installed"
        )
    return answers[0][1]
