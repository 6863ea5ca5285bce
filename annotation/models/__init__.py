"""The annotation app's models, one module per concept; every model is imported here, so
Django registers it and the rest of the project imports models from ``annotation.models``.

Each model carries its invariants (constraints, ``clean``) beside its fields. Writes go
through the services of the capability that owns them (``annotation.participants``,
``annotation.assignment``, ``annotation.studies``, ...)."""

from annotation.models.catalogue import Item, Occupation, Prompt, PromptType
from annotation.models.people import (
    AnnotatorProfile,
    AnnotatorStatus,
    Consent,
    ConsentQuerySet,
    ConsentText,
    DemographicField,
    Instructions,
    StatusChange,
    SyntheticKind,
)
from annotation.models.quotas import GroupQuota, QuotaSeat
from annotation.models.rankings import RankedItem, Ranking
from annotation.models.reports import QualityAnnotatorRow, QualityReport
from annotation.models.studies import (
    Erasure,
    Participation,
    Study,
    default_study,
    default_study_pk,
    study_field,
    study_ids,
)
from annotation.models.tasks import (
    Assignment,
    RankingTask,
    TaskItem,
    check_instruction,
    parse_gold_reference,
)
from annotation.models.validation import Condition, ConditionImage, ConditionPrompt

__all__ = [
    "AnnotatorProfile",
    "AnnotatorStatus",
    "Assignment",
    "Condition",
    "ConditionImage",
    "ConditionPrompt",
    "Consent",
    "ConsentQuerySet",
    "ConsentText",
    "DemographicField",
    "Erasure",
    "GroupQuota",
    "Instructions",
    "Item",
    "Occupation",
    "Participation",
    "Prompt",
    "PromptType",
    "QualityAnnotatorRow",
    "QualityReport",
    "QuotaSeat",
    "RankedItem",
    "Ranking",
    "RankingTask",
    "StatusChange",
    "Study",
    "SyntheticKind",
    "TaskItem",
    "check_instruction",
    "default_study",
    "default_study_pk",
    "parse_gold_reference",
    "study_field",
    "study_ids",
]
