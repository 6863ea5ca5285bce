"""A permission backend (Django's API: ``user.has_perm(capability, study)``) answering from
the user's memberships and ``roles``; ``AUTHENTICATION_BACKENDS`` lists it.

Why a backend of our own, not django-guardian or ``rules``: every object of the project
is scoped through its study (items, tasks, rankings, reports, snapshots by their
lineage), so one row per member and study says everything; guardian's per-object rows
would repeat it on every object, and neither package filters a queryset in the query,
which every list here must (``scope.visible_studies``). The backend answers questions
about one study; lists ask ``scope``. Both read the same rows and ``roles``.

It authenticates nobody (``authenticate`` is None) and grants nothing globally (no
object: False). An inactive or non-staff account may do nothing; a superuser is
answered by Django before any backend (everything: the installation's account).
"""

from __future__ import annotations

from django.contrib.auth.backends import BaseBackend

from annotation.access import roles

CACHE = "_study_roles"


def study_id_of(obj) -> int | None:
    """The id of the study ``obj`` is or belongs to (a ``Study``, or a row with ``study_id``)."""
    from annotation.models.studies import Study

    if isinstance(obj, Study):
        return obj.pk
    return getattr(obj, "study_id", None)


def memberships(user) -> dict[int, tuple[str, bool]]:
    """``{study id: (role, demographics)}`` of ``user``, read once per user object."""
    cached = getattr(user, CACHE, None)
    if cached is None:
        from annotation.access.models import StudyMembership

        rows = StudyMembership.objects.filter(user_id=user.pk).values_list(
            "study_id", "role", "demographics"
        )
        cached = {study: (role, demographics) for study, role, demographics in rows}
        setattr(user, CACHE, cached)
    return cached


def forget(user) -> None:
    """Drop the user object's cached memberships (after a grant or a revoke)."""
    if hasattr(user, CACHE):
        delattr(user, CACHE)


class StudyRoleBackend(BaseBackend):
    def has_perm(self, user_obj, perm: str, obj=None) -> bool:
        if obj is None or perm not in roles.CAPABILITIES:
            return False
        if not (user_obj.is_active and user_obj.is_staff) or user_obj.is_anonymous:
            return False
        study = study_id_of(obj)
        member = memberships(user_obj).get(study) if study is not None else None
        return member is not None and roles.allows(member[0], member[1], perm)
