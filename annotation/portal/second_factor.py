"""The portal's second-factor pages, for accounts that need one (staff): enrolling an
authenticator app (a QR code), giving a code after the password, new recovery codes.
Thin views over ``annotation.accounts.second_factor``; the session is marked verified
with ``django_otp.login``, which ``annotation.accounts.middleware`` checks on every
other page."""

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme, urlencode
from django.views.decorators.cache import never_cache
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods, require_POST
from django_otp import login as otp_login
from django_otp.plugins.otp_static.models import StaticDevice

from annotation.accounts import second_factor
from annotation.accounts.policy import needs_second_factor

WRONG = "That code is wrong or has expired: try the code your app shows now."
WAIT = "Too many wrong codes just now: wait {} seconds, then try the code your app shows."


class CodeForm(forms.Form):
    code = forms.CharField(
        label="Code",
        max_length=32,
        help_text="The 6 digits your authenticator app shows, or one of your recovery codes.",
        widget=forms.TextInput(
            attrs={"autocomplete": "one-time-code", "autocapitalize": "off", "spellcheck": "false"}
        ),
    )


class FirstCodeForm(CodeForm):
    """The enrolment's first code: the app's only (recovery codes come once it is set up)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["code"].help_text = "The 6 digits your authenticator app shows."


def _next(request) -> str:
    """Where to go once done: the ``next`` asked for (on this site), else the start page."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    if url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return reverse("dashboards:progress" if request.user.is_staff else "portal:home")


def _with_next(name: str, request) -> str:
    return f"{reverse(name)}?{urlencode({'next': _next(request)})}"


@sensitive_post_parameters("code")
@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def verify(request):
    """The code after the password; once verified, this page offers new recovery codes
    and a new authenticator app."""
    user = request.user
    if not needs_second_factor(user):
        return redirect(_next(request))
    if not second_factor.enrolled(user):
        return redirect(_with_next("portal:second-factor-enrol", request))
    if user.is_verified():
        if request.GET.get("next"):
            return redirect(_next(request))
        return render(request, "portal/second_factor_done.html")
    form = CodeForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        checked = second_factor.check(user, form.cleaned_data["code"])
        device = checked.device
        if device is not None:
            otp_login(request, device)
            if isinstance(device, StaticDevice):
                left = device.token_set.count()
                messages.warning(
                    request,
                    f"You used a recovery code: {left} left. Make new ones on the "
                    "second-factor page once you have your app again.",
                )
            return redirect(_next(request))
        form.add_error("code", WAIT.format(checked.wait) if checked.wait else WRONG)
    return render(
        request, "portal/second_factor_verify.html", {"form": form, "next": _next(request)}
    )


@sensitive_post_parameters("code")
@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def enrol(request):
    """A new authenticator app: its QR code, then its first code; the recovery codes,
    once. Only with no app yet, or from a verified session (a new phone)."""
    user = request.user
    if not needs_second_factor(user):
        return redirect(_next(request))
    if second_factor.enrolled(user) and not user.is_verified():
        return redirect(_with_next("portal:second-factor", request))
    device = second_factor.pending_device(user)
    form = FirstCodeForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        codes = second_factor.confirm(device, form.cleaned_data["code"])
        if codes is not None:
            otp_login(request, device)
            return render(
                request, "portal/recovery_codes.html", {"codes": codes, "next": _next(request)}
            )
        form.add_error("code", WRONG)
    return render(
        request,
        "portal/second_factor_enrol.html",
        {
            "form": form,
            "qr": second_factor.qr_data_uri(device),
            "secret": second_factor.secret(device),
            "next": _next(request),
        },
    )


@never_cache
@login_required
@require_POST
def recovery_codes(request):
    """Ten new recovery codes, the old ones void (a verified session: the middleware)."""
    if not needs_second_factor(request.user):
        raise Http404("no second factor here")
    codes = second_factor.new_recovery_codes(request.user)
    return render(request, "portal/recovery_codes.html", {"codes": codes, "next": _next(request)})
