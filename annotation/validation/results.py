"""A validation study's report: its rankings read as ``ValidationRecord``s and handed to the
pure ``quality.validation_report`` (the one home of the statistics), with the study's
conditions and their provenance beside the figures.

The rankings that count here are those of the study's ordinary tasks (gold and
attention-check tasks left out: a check card would break the equal numbers of
the two conditions) by consenting, non-excluded annotators. Synthetic
annotators count (a validation study is simulated or run with people, and
``simulate_annotators --study`` is how the path is tested); the report says how
many of its annotators are synthetic. Per-annotator means carry the pseudonym of
the exports only; groups of fewer than ``STEREORANK_GROUP_K`` annotators are withheld.
"""

from __future__ import annotations

from itertools import groupby
from operator import itemgetter

from django.conf import settings

from annotation.errors import ConditionError
from annotation.models import AnnotatorProfile, AnnotatorStatus, RankedItem, Ranking, Study
from annotation.models.validation import Condition
from annotation.rankings.exports import pseudonym
from annotation.rankings.selectors import consent_stands
from core.json import json_safe


def _conditions(study: Study) -> dict[str, Condition]:
    if study.kind != Study.Kind.VALIDATION:
        raise ConditionError(f"study {study.slug} is a {study.kind} study, not a validation one")
    found = {c.role: c for c in study.conditions.all()}
    if set(found) != set(Condition.Role.values):
        raise ConditionError(f"study {study.slug} needs a baseline and a treatment condition")
    return found


def counted_rankings(study: Study):
    """The study's rankings the report reads (see the module docstring)."""
    return (
        Ranking.objects.filter(consent_stands(), task__study=study)
        .filter(task__is_gold=False, task__check_item__isnull=True)
        .exclude(annotator__status=AnnotatorStatus.EXCLUDED)
    )


def records(study: Study):
    """Every ranked image of the rankings that count, as ``ValidationRecord``s (two queries:
    the ranked images, then their annotators once each, their pseudonym and answers shared
    by their records). K is the ranking's number of images: a ranking that counts has no
    check card, so every image it holds is a row here."""
    from annotation.stats.validation import ValidationRecord

    conditions = _conditions(study)
    rows = list(
        RankedItem.objects.filter(ranking__in=counted_rankings(study))
        .values_list(
            "ranking_id",
            "ranking__annotator_id",
            "ranking__task__occupation__name",
            "ranking__task_id",
            "item__condition_image__prompt__condition__role",
            "position",
        )
        .order_by("ranking_id", "position")
        .iterator(chunk_size=10_000)
    )
    found = AnnotatorProfile.objects.filter(pk__in={row[1] for row in rows})
    annotators = {
        pk: (pseudonym(user), demographics or {})
        for pk, user, demographics in found.values_list("pk", "user_id", "demographics")
    }
    names = {role: c.name for role, c in conditions.items()}
    out = []
    for _, ranking in groupby(rows, key=itemgetter(0)):
        ranking = list(ranking)
        for _, annotator, occupation, task, role, position in ranking:
            name, demographics = annotators[annotator]
            out.append(
                ValidationRecord(
                    name, occupation, task, names[role], position, len(ranking), demographics
                )
            )
    return out


def lines(r: dict) -> list[str]:
    """The report as text lines (the command's and the card's wording)."""

    def est(e: dict | None, spec: str = ".2f") -> str:
        if not e or e.get("value") is None:
            return "-"
        ci = "" if e.get("ci_low") is None else f" [{e['ci_low']:{spec}}, {e['ci_high']:{spec}}]"
        return f"{e['value']:{spec}}{ci}"

    base, treat = r["conditions"]["baseline"], r["conditions"]["treatment"]
    out = [
        f"study {r['study']}: {r['n_annotators']} annotators ({r['synthetic_annotators']} "
        f"synthetic), {r['n_rankings']} rankings, {r['n_occupations']} occupations, K = "
        f"{r['k_items']}; mean rank 1..K, higher = less stereotypical",
    ]
    for name in (base, treat):
        c = r["per_condition"][name]
        out.append(
            f"  {name}: n = {c['n']}, M = {c['mean']:.2f} (SD {c['sd']:.2f}), "
            f"95% CI [{c['ci_low']:.2f}, {c['ci_high']:.2f}]"
        )
    for name, test in (("Welch", r["welch"]), ("paired", r["paired_t"])):
        out.append(
            f"  {name}: {test['text']}; difference {test['difference']:.2f} "
            f"[{test['ci_low']:.2f}, {test['ci_high']:.2f}]"
        )
    w = r["wilcoxon"]
    out.append(f"  Wilcoxon signed-rank: W = {w['statistic']}, p = {w['p']:.4g}")
    e = r["effect_size"]
    out.append(
        f"  bootstrap difference (annotators x occupations): {est(r['bootstrap']['difference'])}"
    )
    out.append(
        f"  d_z {est(e['d_z'])}, d_pooled {est(e['d_pooled'])}, "
        f"P(treatment above) {est(e['probability_of_superiority'])}"
    )
    for p in r["power"].values():
        need = p["n_needed"] if p["n_needed"] is not None else "more than 10000"
        achieved = "-" if p["achieved"] is None else f"{p['achieved']:.2f}"
        out.append(
            f"  power ({p['test']}): achieved {achieved}; annotators for "
            f"{p['target']:.0%} at alpha {p['alpha']}: {need}"
        )
    for occupation, f in r["per_occupation"].items():
        out.append(
            f"  {occupation}: {f['n_annotators']} annotators, difference {est(f['difference'])}"
        )
    return out


def report(study: Study, *, n_boot: int = 2000, seed: int = 0) -> dict:
    """The validation report of ``study`` (``quality.validation_report.report``), with the
    study, its conditions and how many annotators are synthetic; ``ConditionError`` when
    there is nothing to report yet."""
    from annotation.stats.validation import ValidationDataError
    from annotation.stats.validation_report import report as compute

    conditions = _conditions(study)
    found = records(study)
    if not found:
        raise ConditionError(f"study {study.slug} has no rankings to report yet")
    try:
        figures = compute(
            found,
            k=settings.STEREORANK["GROUP_K"],
            n_boot=n_boot,
            seed=seed,
            baseline=conditions["baseline"].name,
            treatment=conditions["treatment"].name,
        )
    except ValidationDataError as error:
        raise ConditionError(f"study {study.slug}: {error}") from None
    synthetic = (
        counted_rankings(study)
        .filter(annotator__is_synthetic=True)
        .values("annotator")
        .distinct()
        .count()
    )
    return json_safe(
        {
            "study": study.slug,
            "synthetic_annotators": synthetic,
            "conditions_made": {
                c.name: {
                    "role": c.role,
                    "source": c.source,
                    "version": c.version,
                    "provenance": c.provenance,
                    "prompts": c.prompts.count(),
                }
                for c in conditions.values()
            },
            **figures,
        }
    )


def linked_studies(version: int) -> list[Study]:
    """Validation studies whose treatment is ``version``'s optimiser."""
    return list(
        Study.objects.filter(
            kind=Study.Kind.VALIDATION,
            conditions__role=Condition.Role.TREATMENT,
            conditions__source=Condition.Source.OPTIMISED,
            conditions__version=version,
        ).order_by("pk")
    )


def linked_reports(version: int, *, n_boot: int = 2000) -> list[dict]:
    """``[{"study": slug, "report": ...}]`` of the linked studies that have rankings (the
    model card's validation section)."""
    out = []
    for study in linked_studies(version):
        if counted_rankings(study).exists():
            out.append({"study": study.slug, "report": report(study, n_boot=n_boot)})
    return out
