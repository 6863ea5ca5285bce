"""Grant and revoke a role in a study: one home for every door that does it (``manage.py
grant``/``revoke``, the admin's members inline, the staff API's members). The doors
check that the caller owns the study (``roles.MANAGE_STUDY``); these say what cannot be
recorded at all (an unknown account, a non-staff account, an unknown role, the
demographics permission on a viewer, taking the study's last owner away)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction

from annotation.access import roles
from annotation.access.backend import forget
from annotation.access.models import StudyMembership
from annotation.errors import InvalidMembership, UnknownAccount
from annotation.models.studies import Study


def account(username: str):
    """The account named ``username``; ``UnknownAccount`` (404) when there is none."""
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise UnknownAccount(f"There is no account {username!r}.")
    return user


def _keeps_an_owner(study: Study, user, role: str | None) -> None:
    """Refuse a change that leaves a study that had an owner without one."""
    if role == roles.OWNER:
        return
    owners = StudyMembership.objects.select_for_update().filter(study=study, role=roles.OWNER)
    if list(owners.values_list("user_id", flat=True)) == [user.pk]:
        raise InvalidMembership(
            f"{user.get_username()} is the last owner of {study.slug}: grant another owner first."
        )


@transaction.atomic
def grant(
    study: Study, username: str, role: str, demographics: bool = False, by=None
) -> tuple[StudyMembership, bool]:
    """Give ``username`` ``role`` in ``study`` (replacing any role they had there), with the
    demographics permission or not; True when they had no role there before."""
    problem = roles.refusal(role, demographics)
    if problem:
        raise InvalidMembership(problem[0].upper() + problem[1:] + ".")
    user = account(username)
    if not user.is_staff:
        raise InvalidMembership(
            f"{username} is not a staff account (create_annotator {username} --staff makes one)."
        )
    _keeps_an_owner(study, user, role)
    membership, created = StudyMembership.objects.update_or_create(
        user=user,
        study=study,
        defaults={"role": role, "demographics": demographics, "granted_by": by},
    )
    forget(user)
    return membership, created


@transaction.atomic
def revoke(study: Study, username: str) -> StudyMembership:
    """Take ``username``'s role in ``study`` away (the removed membership)."""
    user = account(username)
    membership = StudyMembership.objects.filter(user=user, study=study).first()
    if membership is None:
        raise UnknownAccount(f"{username} has no role in {study.slug}.")
    _keeps_an_owner(study, user, None)
    membership.delete()
    forget(user)
    return membership


def members(study: Study):
    """The study's memberships with their accounts, owners first."""
    order = {role: i for i, role in enumerate(roles.ROLES)}
    rows = StudyMembership.objects.filter(study=study).select_related("user", "granted_by")
    return sorted(rows, key=lambda m: (order.get(m.role, 99), m.user.get_username()))
