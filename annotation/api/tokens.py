"""The API's password door and its way out.

``POST /api/auth/token/`` trades a username and password for a new token (one per
device that logs in; the plain token is in this answer only: ``annotation.accounts.tokens``).
Staff (``annotation.accounts.policy``) add ``otp``, a code of their authenticator app
or a recovery code: no staff token without the second factor. Its refusals: wrong
credentials (400), no or a wrong code (400 on ``otp``), a staff account with no app yet
(403), too many failures for the account or the address (429,
``annotation.accounts.lockout``), too many requests (429, the ``auth`` throttle).
``POST /api/auth/logout/`` revokes the token it is sent with, ``/api/auth/logout/all/``
every token of its user.
"""

from django.contrib.auth import authenticate
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import parsers, serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.accounts import lockout, second_factor, tokens
from annotation.accounts.policy import needs_second_factor
from annotation.api.auth import ProfileTokenAuthentication
from core.api_bodies import ParsedFirst, StrictJSONParser
from core.throttling import ScopedRateThrottle

WRONG_CREDENTIALS = "Unable to log in with provided credentials."
NOT_ENROLLED = (
    "This account needs a second factor and has none yet: log in on the portal (/login/) "
    "once to set up an authenticator app, then ask for a token with its code."
)
CODE_NEEDED = (
    "This account needs its second factor: send the 6-digit code of your authenticator "
    "app (or a recovery code) as otp."
)
CODE_WRONG = "Wrong or expired code: send the code your app shows now."
CODE_WAIT = "Too many wrong codes just now: wait {} seconds, then send the code your app shows."


class LogInSerializer(serializers.Serializer):
    username = serializers.CharField(write_only=True)
    password = serializers.CharField(
        write_only=True, trim_whitespace=False, style={"input_type": "password"}
    )
    otp = serializers.CharField(
        write_only=True,
        required=False,
        max_length=32,
        help_text="Staff: the 6-digit code of your authenticator app, or a recovery code.",
    )


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField(read_only=True, help_text="Shown once: keep it secret.")
    expiry = serializers.DateTimeField(read_only=True, allow_null=True)


class RefusedSerializer(serializers.Serializer):
    detail = serializers.CharField(read_only=True)


class TokenView(ParsedFirst, APIView):
    """Log in: a token for these credentials. No authentication of its own (a stale
    token sent along must not stand in the way of a new one)."""

    authentication_classes = []
    permission_classes = []
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "auth"
    # Forms too: the log-in is what a plain HTML form or curl -d sends first.
    parser_classes = [StrictJSONParser, parsers.FormParser, parsers.MultiPartParser]

    @extend_schema(
        request=LogInSerializer,
        responses={
            200: TokenSerializer,
            429: OpenApiResponse(
                RefusedSerializer, description="Locked out or throttled: see Retry-After."
            ),
        },
    )
    def post(self, request):
        given = LogInSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        code = given.validated_data.pop("otp", "")
        # The Django request: axes marks a lockout on it.
        user = authenticate(request._request, **given.validated_data)
        if lockout.locked_out(request._request):
            return lockout.lockout_response(request._request)
        if user is None:
            raise serializers.ValidationError({"non_field_errors": [WRONG_CREDENTIALS]})
        if needs_second_factor(user):
            _second_factor(user, code)
        token, plain = tokens.issue(user)
        return Response(TokenSerializer({"token": plain, "expiry": token.expiry}).data)


# Token authentication only (a session has no token to revoke): a missing or bad token is
# a 401 with its challenge, not the 403 the session-first views answer.
REVOKED = {
    204: None,
    401: OpenApiResponse(RefusedSerializer, description="No, or a bad, token."),
}


def _second_factor(user, code: str) -> None:
    """A staff token only after the second factor: a 403 without an app, a 400 without
    the right code."""
    if not second_factor.enrolled(user):
        raise PermissionDenied(NOT_ENROLLED)
    if not code:
        raise serializers.ValidationError({"otp": [CODE_NEEDED]})
    checked = second_factor.check(user, code)
    if checked.device is None:
        wrong = CODE_WAIT.format(checked.wait) if checked.wait else CODE_WRONG
        raise serializers.ValidationError({"otp": [wrong]})


class LogoutView(ParsedFirst, APIView):
    """Revoke the token this request is sent with."""

    authentication_classes = [ProfileTokenAuthentication]
    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses=REVOKED)
    def post(self, request):
        tokens.revoke(request.auth)
        return Response(status=status.HTTP_204_NO_CONTENT)


class LogoutAllView(ParsedFirst, APIView):
    """Revoke every token of this request's user (every device)."""

    authentication_classes = [ProfileTokenAuthentication]
    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses=REVOKED)
    def post(self, request):
        tokens.revoke_all(request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
