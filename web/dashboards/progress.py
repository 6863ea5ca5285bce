"""Annotation progress: per study, then the chosen study's occupations, annotators,
group quotas and demographic counts.

Only annotators whose consent stands are listed and counted; withdrawn and erased
ones appear as totals.
"""

from collections import Counter
from collections.abc import Iterable

from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from annotation.assignment import quotas
from annotation.models import DemographicField
from annotation.participants import consent
from annotation.rankings import selectors
from annotation.rankings.exports import pseudonym
from annotation.studies import lifecycle as studies

from . import learning
from .base import chosen_study, page, percent, staff_only

ANNOTATORS_PER_PAGE = 50


def demographic_counts(fields: Iterable[DemographicField], answers: Iterable[dict]) -> list[dict]:
    """Per field: how many annotators gave each answer, and how many left it blank."""
    answers = list(answers)
    out = []
    for field in fields:
        counts = Counter(a[field.key] for a in answers if a.get(field.key))
        options = list(field.choices) + [DemographicField.PREFER_NOT_TO_SAY]
        ordered = [(o, counts.pop(o, 0)) for o in options] if field.choices else []
        ordered += sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        answered = sum(n for _, n in ordered)
        out.append(
            {
                "key": field.key,
                "label": field.label,
                "counts": ordered,
                "unanswered": len(answers) - answered,
            }
        )
    return out


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
    ]
    answers = selectors.demographic_answers(study)
    demographics = demographic_counts(selectors.demographic_questions(), answers)
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
                for row in studies.progress()
            ],
            "statuses": selectors.annotator_status_counts(study),
            "quotas": [
                {**q, "percent": percent(q["filled"], q["target"])}
                for q in quotas.quota_fill(timezone.now(), study)
            ],
            "learning": learning.context(),
            "samplers": selectors.study_samplers(),
            "consent_warnings": consent.incomplete_open_studies(),
            "section": "progress",
        },
    )
