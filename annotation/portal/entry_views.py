"""Coming in by a study's entry link: its consent page (a GET, which logs nobody in),
joining by agreeing or declining (a POST), a returning browser's way back, and the
participant's resume link.

Thin views over ``annotation.participants.admission`` (who may come in, and with which
key) and ``annotation.portal.device`` (the key in the browser and the resume link).
"""

from django.contrib.auth import login
from django.http import Http404
from django.middleware.csrf import get_token
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods

from annotation.errors import AnnotationError, UnknownKey
from annotation.models.studies import Participation, Study
from annotation.participants import admission, content, recruitment, services
from annotation.portal import device
from annotation.rankings import selectors
from core.errors import http_status

AGREE, DECLINE, CONTINUE = "agree", "decline", "continue"


def _study(slug: str) -> Study:
    study = selectors.study(slug)
    if study is None:
        raise Http404("no such study")
    return study


def _refused(request, study: Study, message: str, status: int):
    return render(
        request, "portal/join_refused.html", {"study": study, "message": message}, status=status
    )


def _browser(request) -> str:
    """This browser's CSRF secret (made now if it has none; Django sends it back in its
    cookie and rotates it at log-in): what binds a join form to the browser it was shown in."""
    get_token(request)
    return request.META["CSRF_COOKIE"]


def _own(request) -> Participation | None:
    """The participation of the logged-in user, if any."""
    if not request.user.is_authenticated:
        return None
    return recruitment.participation_of(services.get_profile(request.user))


@never_cache
@require_http_methods(["GET", "POST"])
def join(request, slug: str):
    """A crowd platform's entry link. GET: the study's consent page (or, for a browser
    that took part, the way back); POST: join by agreeing or declining, or come back.
    Previews, bad links, repeat MTurk workers and floods get a page saying so."""
    study = _study(slug)
    try:
        arrival = recruitment.parse_arrival(study.platform, request.GET)
        if arrival.preview:
            return render(request, "portal/join_preview.html", {"study": study})
        if request.method == "POST":
            return _join(request, study, arrival)
        return _consent_page(request, study, arrival)
    except AnnotationError as error:
        return _refused(request, study, error.message, http_status(error))


def _consent_page(request, study: Study, arrival: recruitment.Arrival):
    own = _own(request)
    if admission.matches(own, study, arrival):  # logged in already: straight on
        admission.continue_session(own, arrival)
        response = redirect(recruitment.landing(own))
        if secret := admission.issue_secret(own):  # made before secrets
            device.remember(response, study, secret)
        return response
    context = {
        "study": study,
        "action": request.get_full_path(),
        "token": admission.form_token(study, arrival, _browser(request)),
    }
    held = admission.by_secret(study, device.held_secret(request, study))
    if admission.matches(held, study, arrival):  # this browser took part: one POST back
        return render(request, "portal/join_back.html", context)
    admission.check_newcomer(study, arrival)
    text = content.consent_text(study, request.portal_language)
    query = request.META.get("QUERY_STRING", "")
    decline = reverse("portal:join_decline", args=[study.slug]) + (f"?{query}" if query else "")
    return render(
        request,
        "portal/join.html",
        {**context, "consent": text, "version": text.version, "decline": decline},
    )


def _join(request, study: Study, arrival: recruitment.Arrival):
    action = request.POST.get("action")
    if action not in (AGREE, DECLINE, CONTINUE):
        return _refused(request, study, gettext("The form did not say whether you agree."), 400)
    token = request.POST.get("token", "")
    browser = _browser(request)  # read before a log-in rotates it
    form_secret = admission.secret_of_form(study, arrival, token, browser) if token else ""
    own = _own(request)
    held = device.held_secret(request, study)
    if admission.matches(own, study, arrival):
        participation, secret = admission.continue_session(own, arrival), ""
    elif found := admission.returning(study, arrival, held):
        participation, secret = found, held
    elif found := admission.by_form(study, arrival, form_secret):  # a double click
        participation, secret = found, form_secret
    elif action == CONTINUE or not form_secret or admission.spent(form_secret):
        # This browser's key is gone, or the form was used already: the page again.
        return redirect(request.get_full_path())
    else:
        admission.check_newcomer(study, arrival)
        if not recruitment.allow_new_participant(request, study):
            return _refused(
                request,
                study,
                gettext(
                    "Too many new participants from your network just now: "
                    "please try again in a while."
                ),
                429,
            )
        participation, secret = admission.enroll(study, arrival, form_secret), form_secret
    if request.user != participation.annotator.user:
        login(
            request,
            participation.annotator.user,
            backend="django.contrib.auth.backends.ModelBackend",
        )
    response = redirect(_answer(participation, action, request.portal_language))
    if secret := secret or admission.issue_secret(participation) or "":
        device.remember(response, study, secret)
    return response


def _arrives_as(request, study: Study, participation: Participation) -> bool:
    """Whether a resume link's arrival is its participation's own: a link carrying a crowd
    id (the platform's parameters) must carry that participation's; one without any is
    the participant's own bookmark (the link is their key, shown only to them)."""
    id_name = recruitment.PLATFORM_PARAMS[study.platform][0]
    if id_name not in request.GET:
        return True
    try:
        arrival = recruitment.parse_arrival(study.platform, request.GET)
    except AnnotationError:
        return False
    return admission.matches(participation, study, arrival)


def _answer(participation: Participation, action: str, language: str | None) -> str:
    """Record a first answer to the consent (later ones go through the consent page), an
    agreement to the text in ``language``, the one the page showed; the page (URL name)
    to go on to."""
    profile = participation.annotator
    fresh = participation.outcome == Participation.Outcome.TAKING_PART
    if fresh and not profile.consents.exists():
        if action == AGREE:
            services.give_consent(profile, language)
            return "portal:home" if profile.demographics else "portal:demographics"
        if action == DECLINE:
            recruitment.screen_out(participation, Participation.ScreenOut.DECLINED_CONSENT)
    return recruitment.landing(participation)


@never_cache
@require_GET
def join_decline(request, slug: str):
    """Asks a visitor who tapped "I do not agree" on an entry link's consent page to
    confirm; the confirming form posts ``action=decline`` to the entry link."""
    study = _study(slug)
    try:
        arrival = recruitment.parse_arrival(study.platform, request.GET)
    except AnnotationError as error:
        return _refused(request, study, error.message, http_status(error))
    if arrival.preview:
        return render(request, "portal/join_preview.html", {"study": study})
    query = request.META.get("QUERY_STRING", "")
    action = reverse("portal:join", args=[study.slug]) + (f"?{query}" if query else "")
    return render(
        request,
        "portal/join_decline.html",
        {
            "study": study,
            "action": action,
            "token": admission.form_token(study, arrival, _browser(request)),
        },
    )


@never_cache
@require_http_methods(["GET", "POST"])
def resume(request, slug: str, secret: str):
    """A participant's resume link: on any device, after a confirming POST (a GET logs
    nobody in), back into their participation; this browser keeps the key."""
    study = _study(slug)
    participation = admission.by_secret(study, secret)
    if participation is not None and not _arrives_as(request, study, participation):
        participation = None  # the link with another crowd id: another person's door
    if participation is None:
        error = UnknownKey(
            gettext(
                "This link opens nothing: it is mistyped, or the data it led to was erased. "
                "Open the study again from the platform."
            )
        )
        return _refused(request, study, error.message, http_status(error))
    if request.method == "GET":
        return render(request, "portal/resume.html", {"study": study})
    if request.user != participation.annotator.user:
        login(
            request,
            participation.annotator.user,
            backend="django.contrib.auth.backends.ModelBackend",
        )
    return device.remember(redirect(recruitment.landing(participation)), study, secret)
