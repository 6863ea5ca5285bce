"""The API's password door: ``POST /api/auth/token/`` trades a username and password for
a token. Its refusals: wrong credentials (400), too many failures for the account or the
address (429, ``annotation.accounts.lockout``), too many requests (429, the ``auth``
throttle)."""

from django.contrib.auth import authenticate
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import parsers, serializers
from rest_framework.authtoken.models import Token
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.accounts import lockout
from core.throttling import ScopedRateThrottle

WRONG_CREDENTIALS = "Unable to log in with provided credentials."


class LogInSerializer(serializers.Serializer):
    username = serializers.CharField(write_only=True)
    password = serializers.CharField(
        write_only=True, trim_whitespace=False, style={"input_type": "password"}
    )


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField(read_only=True)


class RefusedSerializer(serializers.Serializer):
    detail = serializers.CharField(read_only=True)


class TokenView(APIView):
    """Log in: a token for these credentials. No authentication of its own (a stale
    token sent along must not stand in the way of a new one)."""

    authentication_classes = []
    permission_classes = []
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "auth"
    # Forms too: the log-in is what a plain HTML form or curl -d sends first.
    parser_classes = [parsers.JSONParser, parsers.FormParser, parsers.MultiPartParser]

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
        # The Django request: axes marks a lockout on it.
        user = authenticate(request._request, **given.validated_data)
        if lockout.locked_out(request._request):
            return lockout.lockout_response(request._request)
        if user is None:
            raise serializers.ValidationError({"non_field_errors": [WRONG_CREDENTIALS]})
        token, _ = Token.objects.get_or_create(user=user)
        return Response({"token": token.key})
