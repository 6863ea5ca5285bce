"""Portal pages of running a study: leaving it (withdraw, or withdraw and erase).

Thin views over ``annotation.services`` and ``annotation.erasure``, as in
``annotation.portal``.
"""

from django import forms
from django.contrib import messages
from django.contrib.auth import logout
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from annotation import services
from annotation.erasure import erase_annotator
from annotation.study_models import Erasure

STOP, ERASE = "stop", "erase"


class WithdrawForm(forms.Form):
    choice = forms.ChoiceField(
        label="What should happen?",
        widget=forms.RadioSelect,
        choices=[
            (STOP, "Stop taking part. The rankings and answers you gave stay in the study."),
            (
                ERASE,
                "Stop and erase my data: my answers about me and my rankings are deleted "
                "and my account is closed. This cannot be undone.",
            ),
        ],
        error_messages={"required": "Choose one of the two options."},
    )


@login_required
@require_http_methods(["GET", "POST"])
def withdraw(request):
    """Confirm a withdrawal, with or without erasure of the annotator's data."""
    profile = services.get_profile(request.user)
    form = WithdrawForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        if form.cleaned_data["choice"] == ERASE:
            erase_annotator(profile, via=Erasure.Via.PARTICIPANT)
            logout(request)
            return redirect("portal:erased")
        services.withdraw_consent(profile)
        messages.info(request, "Your consent is withdrawn. You can agree again at any time.")
        return redirect("portal:consent")
    return render(request, "portal/withdraw.html", {"form": form})


def erased(request):
    """The last page after an erasure: the visitor is logged out."""
    return render(request, "portal/erased.html")
