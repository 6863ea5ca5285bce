"""Annotation progress: per study, then the chosen study's occupations, annotators,
group quotas and demographic counts.

Only annotators whose consent stands are listed and counted; withdrawn and erased
ones appear as totals. The demographic counts and the quotas' fill are group figures:
a group of fewer than ``STEREORANK_GROUP_K`` annotators is hidden there, only how many
were hidden is said (``core.small_groups``). The studies are the viewer's
(``annotation.access``); the annotator table is for a role that reads rows.
"""

from collections import Counter
from collections.abc import Iterable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from annotation.access import roles
from annotation.assignment import quotas
from annotation.crowd import selectors as crowd
from annotation.models import DemographicField
from annotation.participants import content
from annotation.rankings import selectors
from annotation.rankings.exports import pseudonym
from annotation.studies import lifecycle as studies
from core.small_groups import keep_groups

from . import learning
from .base import allows, chosen_study, page, percent, staff_only

ANNOTATORS_PER_PAGE = 50


def demographic_counts(
    fields: Iterable[DemographicField], answers: Iterable[dict], k: int
) -> list[dict]:
    """Per field: how many annotators gave each answer (answers of ``k`` or more only; the
    note says how many were hidden), and how many left it blank."""
    answers = list(answers)
    out = []
    for field in fields:
        counts = Counter(a[field.key] for a in answers if a.get(field.key))
        options = list(field.choices) + [DemographicField.PREFER_NOT_TO_SAY]
        ordered = [(o, counts.pop(o, 0)) for o in options] if field.choices else []
        ordered += sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        answered = sum(n for _, n in ordered)
        shown = keep_groups(dict(ordered), k)
        out.append(
            {
                "key": field.key,
                "label": field.label,
                "counts": list(shown.groups.items()),
                "hidden": shown.note,
                "unanswered": len(answers) - answered,
            }
        )
    return out


def quota_rows(quotas: list[dict], k: int) -> tuple[list[dict], str]:
    """The quotas with their fill, those filled by 1 to ``k - 1`` annotators hidden (an empty
    one is no group); the note that says how many were."""
    shown = keep_groups({str(q["pk"]): q for q in quotas}, k, size=lambda q: q["filled"])
    return [
        {**q, "percent": percent(q["filled"], q["target"])}
        for q in quotas
        if not q["filled"] or str(q["pk"]) in shown.groups
    ], shown.note


@staff_only
def progress(request: HttpRequest) -> HttpResponse:
    """Annotation progress: per study, then the chosen study's occupations, annotators,
    quotas and demographic counts."""
    study = chosen_study(request)
    occupations = [
        {**row, "percent": percent(row["rankings"], row["slots"])}
        for row in selectors.occupation_progress(study)
    ]
    page_obj = selectors.annotator_progress(request.GET.get("page"), ANNOTATORS_PER_PAGE, study)
    annotators = [
        {
            "username": p["user__username"],
            "pseudonym": pseudonym(p["user_id"]),
            "done": p["done"],
            "quota": p["quota"],
            "percent": percent(p["done"], p["quota"]),
            "synthetic": p["is_synthetic"],
        }
        for p in page_obj.object_list
        if allows(request, roles.VIEW_DATA, study)  # a viewer reads the aggregates only
    ]
    k = settings.STEREORANK["GROUP_K"]
    answers = selectors.demographic_answers(study)  # counted; shown per answer only with
    demographics = None  # the demographics permission (README)
    if allows(request, roles.VIEW_DEMOGRAPHICS, study):
        demographics = demographic_counts(selectors.demographic_questions(), answers, k)
    quota_table, quotas_hidden = quota_rows(quotas.quota_fill(timezone.now(), study), k)
    totals = {
        key: sum(row[key] for row in occupations)
        for key in ("n_tasks", "slots", "rankings", "complete")
    }
    totals["percent"] = percent(totals["rankings"], totals["slots"])
    return page(
        request,
        "dashboards/progress.html",
        {
            "occupations": occupations,
            "totals": totals,
            "annotators": annotators,
            "page_obj": page_obj,
            "demographics": demographics,
            "n_people": len(answers),
            "studies": [
                {**row, "percent": percent(row["rankings"], row["slots"])}
                for row in studies.progress(request.user)
            ],
            "statuses": selectors.annotator_status_counts(study),
            "quotas": quota_table,
            "quotas_hidden": quotas_hidden,
            "learning": learning.context(request.user),
            "samplers": selectors.study_samplers(request.user),
            "consent_warnings": content.unready_open_studies(request.user),
            "group_k": k,
            # The payment ledger: the study's owners only (docs/privacy.md).
            "ledger": crowd.ledger(study) if allows(request, roles.MANAGE_STUDY, study) else None,
            "section": "progress",
        },
    )
