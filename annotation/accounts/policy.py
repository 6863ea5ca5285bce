"""Which accounts must give a second factor: the one place that decides it.

Today an account needs one when it is staff or superuser (the study team and the
admin); study roles (issue 30) plug in here. Participants never do: they hold no
password worth a second factor's cost to them, and no staff power.
"""

from __future__ import annotations


def needs_second_factor(user) -> bool:
    """Whether ``user`` (any user object, anonymous included) must give a second factor
    (a TOTP code or a recovery code) before a session or an API token is theirs."""
    if not getattr(user, "is_authenticated", False):
        return False
    return bool(user.is_staff or user.is_superuser)
