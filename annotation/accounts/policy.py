"""Which accounts must give a second factor: the one place that decides it.

An account needs one when it is staff or superuser: the installation's admin and every
account with a study role, since a role is granted to staff accounts only and counts for
them only (``annotation.access.services.grant``, ``annotation.access.scope``).
Participants never do: they hold no password worth a second factor's cost to them, and
no staff power.
"""

from __future__ import annotations


def needs_second_factor(user) -> bool:
    """Whether ``user`` (any user object, anonymous included) must give a second factor
    (a TOTP code or a recovery code) before a session or an API token is theirs."""
    if not getattr(user, "is_authenticated", False):
        return False
    return bool(user.is_staff or user.is_superuser)
