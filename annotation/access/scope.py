"""The one queryset every staff surface filters on: ``visible_studies(user, capability)``,
the studies the user may ``capability`` in. Every selector a staff surface calls takes
the viewer and filters on it in the query (``in_scope``); a study asked for by slug is
``study_for``: a 404 when the viewer has no role in it (the same answer as for a study
that does not exist), a 403 when their role there lacks the capability.

A superuser (the installation's account, made by ``createsuperuser``) sees every study.
"""

from __future__ import annotations

from django.db.models import QuerySet

from annotation.access import roles
from annotation.access.models import StudyMembership
from annotation.errors import NotVisible, RoleRefused
from annotation.models.studies import DEFAULT_STUDY_SLUG, Study, default_study_pk


class _System:
    """The installation itself as a viewer: the commands (whoever runs them holds the
    database already), the workers, the scoring service. Named where it is meant, so
    that a staff surface that forgets its viewer fails instead of seeing everything."""

    is_authenticated = is_active = is_staff = is_superuser = True
    is_anonymous = False
    pk = None

    def has_perm(self, perm: str, obj=None) -> bool:
        return True

    def get_username(self) -> str:
        return "(the installation)"

    def __repr__(self) -> str:
        return "SYSTEM"


SYSTEM = _System()


def is_staff(user) -> bool:
    """An active staff account (or the superuser): the only ones a role can count for."""
    return bool(
        user is not None
        and user.is_authenticated
        and user.is_active
        and (user.is_staff or user.is_superuser)
    )


def visible_studies(user, capability: str = roles.VIEW_DATA) -> QuerySet[Study]:
    """The studies ``user`` may ``capability`` in (``roles``), as one subquery."""
    roles_with = roles.roles_with(capability)  # checks the name first
    if not is_staff(user):
        return Study.objects.none()
    if user.is_superuser:
        return Study.objects.all()
    members = StudyMembership.objects.filter(user_id=user.pk, role__in=roles_with)
    if capability == roles.VIEW_DEMOGRAPHICS:
        members = members.filter(demographics=True)
    return Study.objects.filter(pk__in=members.values("study_id"))


def in_scope(queryset: QuerySet, user, capability: str = roles.VIEW_DATA, path: str = "study"):
    """``queryset`` filtered to the rows whose study (at lookup ``path``) ``user`` may
    ``capability`` in."""
    return queryset.filter(**{f"{path}__in": visible_studies(user, capability)})


def has_any(user, capability: str = roles.ANY_ROLE) -> bool:
    """Whether ``user`` may ``capability`` in some study (a door's "may come in at all")."""
    return visible_studies(user, capability).exists()


def study_for(user, slug: str | None, capability: str = roles.ANY_ROLE) -> Study:
    """The study ``slug`` names (the default one for None or "") for ``user``:
    ``NotVisible`` (404) when there is none or ``user`` has no role in it, ``RoleRefused``
    (403) when their role there does not allow ``capability``."""
    slug = slug or DEFAULT_STUDY_SLUG
    if slug == DEFAULT_STUDY_SLUG:
        default_study_pk()  # made when missing, as every study-scoped read does
    study = visible_studies(user, roles.ANY_ROLE).filter(slug=slug).first()
    if study is None:
        raise NotVisible()
    if not user.has_perm(capability, study):
        raise RoleRefused(f"Your role in {study.slug} does not allow this.")
    return study


def may(user, capability: str, study) -> bool:
    """Whether ``user`` may ``capability`` in ``study`` (Django's ``has_perm``)."""
    return is_staff(user) and user.has_perm(capability, study)


# A report's per-person parts: the quality report's annotator table, a validation
# report's annotators' means. A viewer reads the rest (the aggregates).
PER_PERSON = ("annotators",)


def report_for(user, study, report: dict) -> dict:
    """``report`` as ``user`` may read it: whole for a role that reads rows
    (``roles.VIEW_DATA``), else without its per-person parts (a viewer's aggregates)."""
    if may(user, roles.VIEW_DATA, study):
        return report
    return {**report, **{key: [] for key in PER_PERSON if key in report}}


def is_superuser(user) -> bool:
    """The installation's account (or ``SYSTEM``): it sees everything."""
    return is_staff(user) and bool(user.is_superuser)


def visible_prompts(user) -> QuerySet:
    """The catalogue's prompts ``user`` may read: those no study's item uses yet (the
    shared catalogue) and those an item of a study they may read uses; a prompt that only
    another study's items use (imported by it) is that study's."""
    from django.db.models import Exists, OuterRef, Q

    from annotation.models import Item, Prompt

    items_of = Item.objects.filter(prompt=OuterRef("pk"))
    seen = in_scope(items_of, user)
    return Prompt.objects.filter(Q(Exists(seen)) | ~Q(Exists(items_of)))


def visible_occupations(user) -> QuerySet:
    """The catalogue's occupations ``user`` may read: those with a prompt they may read
    (``visible_prompts``), or with none at all."""
    from django.db.models import Exists, OuterRef

    from annotation.models import Occupation, Prompt

    has_prompts = Prompt.objects.filter(occupation=OuterRef("pk"))
    mine = visible_prompts(user).filter(occupation=OuterRef("pk"))
    return Occupation.objects.filter(Exists(mine) | ~Exists(has_prompts))
