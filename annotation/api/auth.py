"""Token authentication that brings the annotator profile along in the same query."""

from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

from annotation.rankings.selectors import token_with_profile


class ProfileTokenAuthentication(TokenAuthentication):
    """``Authorization: Token <key>``: the token, its user and the user's annotator
    profile in one query, so services.get_profile costs nothing afterwards."""

    def authenticate_credentials(self, key: str):
        token = token_with_profile(key)
        if token is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        return (token.user, token)
