"""Token authentication that brings the annotator profile along in the same query."""

from django.utils.translation import gettext_lazy as _
from drf_spectacular.authentication import TokenScheme
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication


class ProfileTokenAuthentication(TokenAuthentication):
    """``Authorization: Token <key>``: the token, its user and the user's annotator
    profile in one query, so services.get_profile costs nothing afterwards."""

    def authenticate_credentials(self, key: str):
        model = self.get_model()
        try:
            token = model.objects.select_related("user__annotator").get(key=key)
        except model.DoesNotExist:
            raise exceptions.AuthenticationFailed(_("Invalid token.")) from None
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        return (token.user, token)


class ProfileTokenScheme(TokenScheme):
    """The same ``Token`` header in the OpenAPI schema, under its own component name
    (DRF's TokenAuthentication, used by other views, owns "tokenAuth")."""

    target_class = ProfileTokenAuthentication
    name = "annotatorTokenAuth"
    priority = 0  # before TokenScheme (-1), which matches subclasses too
