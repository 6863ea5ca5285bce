"""Token authentication over hashed tokens, bringing the annotator profile along in the
same query (``annotation.accounts.tokens.authenticated``)."""

from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

from annotation.accounts import tokens

REFUSED = _(
    "Invalid, expired or revoked token: log in again (POST /api/auth/token/) for a new one."
)


class ProfileTokenAuthentication(TokenAuthentication):
    """``Authorization: Token <key>``: the token's digest, its user and the user's
    annotator profile in one query, so services.get_profile costs nothing afterwards."""

    def authenticate_credentials(self, key: str):
        token = tokens.authenticated(key)
        if token is None:
            raise exceptions.AuthenticationFailed(REFUSED)
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        return (token.user, token)
