"""How a log line names a person: by pseudonym, never by username, crowd id or address.

Logs outlive an erasure (they are the operator's, kept as long as the operator keeps
them), so what they carry must single nobody out once the account is erased:

- ``person(username)``: the account's pseudonym (``a-`` and 12 hex digits, as the
  exports name it); a name that is no account's (a mistyped log-in) becomes
  ``unknown-`` and a keyed hash of it.
- ``address(ip)``: ``ip-`` and a keyed hash of the address (the same hash the entry
  link's throttle logs).
- ``axes_client(...)``: django-axes' ``AXES_CLIENT_STR_CALLABLE``: its lines about
  failed log-ins and lockouts name the account and the address as above, instead of
  the username and the address as typed.
"""

from __future__ import annotations

import hashlib
import hmac

from django.conf import settings
from django.contrib.auth import get_user_model

from annotation.rankings.exports import pseudonym

HASH_DIGITS = 12


def _keyed(key_name: str, text: str) -> str:
    key = settings.STEREORANK[key_name].encode()
    return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()[:HASH_DIGITS]


def person(username: str | None) -> str:
    """The pseudonym of the account ``username`` names (``unknown-...`` when none does)."""
    if not username:
        return "no-username"
    user_id = (
        get_user_model()
        .objects.filter(**{get_user_model().USERNAME_FIELD: username})
        .values_list("pk", flat=True)
        .first()
    )
    if user_id is None:
        return "unknown-" + _keyed("PSEUDONYM_KEY", username)
    return pseudonym(user_id)


def address(ip: str | None) -> str:
    """A keyed hash of the client address (``ip-...``)."""
    return "ip-" + _keyed("EXTERNAL_ID_KEY", ip or "")


def axes_client(username, ip_address, user_agent, path_info, request) -> str:
    """django-axes' client string (``AXES_CLIENT_STR_CALLABLE``), pseudonymous."""
    return f"{{account: {person(username)}, address: {address(ip_address)}, path: {path_info}}}"
