"""Sessions that owe a second factor reach nothing but the pages to give one.

After ``django_otp.middleware.OTPMiddleware`` (which marks a session verified once a
device accepted a code). An account that needs a second factor
(``policy.needs_second_factor``) whose session is not verified is sent to the portal's
second-factor page (enrol or verify, then on to where it was going); under /api/ it is
answered 403 in JSON. Participants are never stopped, and neither are requests
authenticated by an API token (no session: the token itself was issued after the
second factor).
"""

from __future__ import annotations

from django.contrib.auth.views import redirect_to_login
from django.http import JsonResponse
from django.urls import reverse

from annotation.accounts.policy import needs_second_factor

API_PREFIX = "/api/"
# What a session owing its second factor may still reach (URL names).
OPEN = frozenset(
    {
        "portal:second-factor",
        "portal:second-factor-enrol",
        "portal:login",  # logged in already: it sends the person on (and here)
        "portal:logout",
        "admin:login",
        "admin:logout",
        "api-token",
        "api-logout",
        "api-logout-all",
        "healthz",
    }
)
API_REFUSAL = (
    "This staff session has not given its second factor: finish logging in on the portal "
    "(a code from your authenticator app), or use an API token."
)


class SecondFactorRequired:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        user = request.user
        if not needs_second_factor(user) or user.is_verified():
            return None
        if request.resolver_match.view_name in OPEN:
            return None
        if request.path.startswith(API_PREFIX):
            return JsonResponse({"detail": API_REFUSAL}, status=403)
        return redirect_to_login(request.get_full_path(), reverse("portal:second-factor"))
