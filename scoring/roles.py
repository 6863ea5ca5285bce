"""The scoring role: who may score and optimise prompts (API, commands, the checker page).

A user has it when in the Django group ``scoring`` (staff add users to it in
the admin, or ``manage.py grant_scoring USER``) or is a superuser. Annotators
do not have it: signing up puts nobody in a group.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, Group
from rest_framework.permissions import BasePermission

SCORING_GROUP = "scoring"


def has_scoring_role(user: AbstractBaseUser | None) -> bool:
    if user is None or not user.is_authenticated or not user.is_active:
        return False
    return user.is_superuser or user.groups.filter(name=SCORING_GROUP).exists()


def grant(user: AbstractBaseUser) -> bool:
    """Put ``user`` in the scoring group; False when it was already there."""
    group, _ = Group.objects.get_or_create(name=SCORING_GROUP)
    if user.groups.filter(pk=group.pk).exists():
        return False
    user.groups.add(group)
    return True


def revoke(user: AbstractBaseUser) -> bool:
    """Take ``user`` out of the scoring group; False when it was not in it."""
    group = Group.objects.filter(name=SCORING_GROUP).first()
    if group is None or not user.groups.filter(pk=group.pk).exists():
        return False
    user.groups.remove(group)
    return True


class HasScoringRole(BasePermission):
    """DRF: only users in the scoring role."""

    message = "Scoring needs the scoring role; ask a staff member to grant it."

    def has_permission(self, request, view) -> bool:
        return has_scoring_role(request.user)
