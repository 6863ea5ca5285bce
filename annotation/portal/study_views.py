"""Portal pages of running a study: leaving with a completion code (after the study's
minimum work) or a screen-out code (a declined consent can be taken back until then),
logging out without a password, withdrawing (with or without erasure). Arriving by
an entry link is ``annotation.portal.entry_views``.

Thin views over ``annotation.participants.recruitment``, ``annotation.participants.services`` and
``annotation.participants.erasure``, as in ``annotation.portal.views``.
"""

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import logout
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_http_methods, require_POST

from annotation.assignment.next_task import next_task
from annotation.errors import AnnotationError, ConsentRequired, GroupFull, NotFinished
from annotation.models.studies import Erasure, Participation
from annotation.participants import recruitment, services
from annotation.participants.erasure import erase_annotator
from annotation.portal import device
from annotation.rankings import selectors
from annotation.rankings.exports import pseudonym

STOP, ERASE = "stop", "erase"


class WithdrawForm(forms.Form):
    choice = forms.ChoiceField(
        label=_("What should happen?"),
        widget=forms.RadioSelect,
        choices=[
            (STOP, _("Stop taking part. The rankings and answers you gave stay in the study.")),
            (
                ERASE,
                _(
                    "Stop and erase my data: my answers about me and my rankings are deleted "
                    "and my account is closed. This cannot be undone."
                ),
            ),
        ],
        error_messages={"required": _("Choose one of the two options.")},
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
            return device.forget(redirect("portal:erased"), profile.study)
        services.withdraw_consent(profile)
        messages.info(
            request, gettext("Your consent is withdrawn. You can agree again at any time.")
        )
        return redirect("portal:consent")
    return render(request, "portal/withdraw.html", {"form": form})


@login_required
def decline(request):
    """Asks a participant who tapped "I do not agree" to confirm, saying what it means;
    the confirming form posts ``action=decline`` to the consent page."""
    participation = _participation(request)
    if participation is None or participation.outcome:
        return redirect("portal:consent")
    return render(request, "portal/decline.html", {"study": participation.study})


@login_required
@require_POST
def reconsider(request):
    """A participant who declined by mistake goes back to the consent text (before leaving)."""
    participation = _participation(request)
    if participation is None:
        return redirect("portal:home")
    try:
        recruitment.reconsider(participation)
    except AnnotationError as error:
        messages.error(request, error.message)
        return redirect("portal:screened_out")
    messages.info(request, gettext("Your answer is taken back: read the consent text again."))
    return redirect("portal:consent")


@login_required
@require_POST
def leave(request):
    """Back to the platform with the screen-out code; from then on the answer stands."""
    participation = _participation(request)
    if participation is None or participation.outcome != Participation.Outcome.SCREENED_OUT:
        return redirect("portal:home")
    recruitment.leave(participation)
    study = participation.study
    link = recruitment.exit_link(study, study.screen_out_code, study.screen_out_url)
    return redirect(link or "portal:screened_out")


@require_POST
def logout_view(request):
    """Log out; a participant who came by an entry link (no password) is told how to come
    back, anyone else goes to the log-in page."""
    participation = _participation(request) if request.user.is_authenticated else None
    link = device.resume_link(request, participation) if participation else ""
    logout(request)
    if participation is None:
        return redirect(settings.LOGOUT_REDIRECT_URL)
    return render(request, "portal/left.html", {"study": participation.study, "resume_link": link})


def erased(request):
    """The last page after an erasure: the visitor is logged out."""
    return render(request, "portal/erased.html")


def _participation(request) -> Participation | None:
    return recruitment.participation_of(services.get_profile(request.user))


@login_required
def complete(request):
    """The completion code, once no task is left for the participant and they did the
    study's minimum work (checked here, so the page cannot be reached early)."""
    participation = _participation(request)
    if participation is None:
        return redirect("portal:home")
    if participation.outcome == Participation.Outcome.SCREENED_OUT:
        return redirect("portal:screened_out")
    if participation.outcome != Participation.Outcome.COMPLETED:
        try:
            if next_task(participation.annotator) is not None:
                return redirect("portal:rank")
        except ConsentRequired:
            return redirect("portal:consent")
        except GroupFull as error:
            return turned_away(request, participation.annotator, error)
        try:
            recruitment.complete(participation)
        except NotFinished as error:  # no task free now, and too little done for the code
            messages.info(request, error.message)
            return redirect("portal:home")
    study = participation.study
    return render(
        request,
        "portal/complete.html",
        {
            "study": study,
            "code": study.completion_code,
            "link": recruitment.exit_link(study, study.completion_code, study.completion_url),
        },
    )


def turned_away(request, profile, error: GroupFull):
    """A full group: a participant is screened out (with the code), anyone else told kindly."""
    participation = recruitment.participation_of(profile)
    if participation is not None:
        recruitment.screen_out(participation, Participation.ScreenOut.GROUP_FULL)
        return redirect("portal:screened_out")
    messages.info(request, error.message)
    return redirect("portal:home")


@login_required
def screened_out(request):
    """The screen-out code, for a participant who declined consent, whose group is full, or
    whom the quality checks excluded (with the reason and the study's contact)."""
    participation = _participation(request)
    if participation is None or participation.outcome != Participation.Outcome.SCREENED_OUT:
        return redirect("portal:home")
    study = participation.study
    excluded = participation.screen_out_reason == Participation.ScreenOut.EXCLUDED
    return render(
        request,
        "portal/screened_out.html",
        {
            "study": study,
            "reason": participation.screen_out_reason,
            "why": selectors.exclusion_reason(participation.annotator) if excluded else "",
            "contact": selectors.study_contact(study.pk),
            "pseudonym": pseudonym(request.user.pk),
            "can_reconsider": recruitment.can_reconsider(participation),
            "code": study.screen_out_code,
            "link": recruitment.exit_link(study, study.screen_out_code, study.screen_out_url),
        },
    )
