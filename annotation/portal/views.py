"""The annotator portal: server-rendered pages over ``annotation.participants.services``.

Views stay thin: they parse the request, call a service and render or redirect.
Every page except log-in, sign-up and consent needs an active consent.
"""

from functools import wraps

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import UserCreationForm
from django.contrib.auth.views import LoginView
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from annotation.assignment.next_task import next_task
from annotation.assignment.selectors import shown_cards
from annotation.errors import AnnotationError, AnnotatorExcluded, GroupFull, RankedBefore
from annotation.models import AnnotatorStatus
from annotation.participants import admission, content, recruitment, services
from annotation.portal import answers, device, practice
from annotation.portal import forms as demographics_forms
from annotation.portal.study_views import turned_away
from annotation.rankings import selectors
from annotation.rankings.exports import pseudonym
from annotation.studies import lifecycle as studies
from core.errors import http_status


def consent_required(view):
    """Log-in required, then an active consent; otherwise off to the consent page."""

    @login_required
    @wraps(view)
    def wrapped(request, *args, **kwargs):
        profile = services.get_profile(request.user)
        if not selectors.has_consent(profile):
            return redirect("portal:consent")
        request.profile = profile
        return view(request, *args, **kwargs)

    return wrapped


class PortalLoginView(LoginView):
    """Log-in; without a ``next``, staff go to the dashboards, annotators to their home."""

    template_name = "portal/login.html"
    redirect_authenticated_user = True

    def get_default_redirect_url(self) -> str:
        if self.request.user.is_staff:
            return reverse("dashboards:progress")
        return super().get_default_redirect_url()


@require_http_methods(["GET", "POST"])
def signup(request):
    """An account of one's own, in the study ``?study=`` names (the default one unless it
    does), where its owner turned open sign-up on; otherwise a page saying how to join."""
    if request.user.is_authenticated:
        return redirect("portal:home")
    try:
        study = admission.signup_study(request.GET.get("study"))
    except AnnotationError as error:
        return render(
            request, "portal/signup.html", {"closed": error.message}, status=http_status(error)
        )
    form = UserCreationForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        services.get_profile(user, study=study)
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        return redirect("portal:consent")
    return render(request, "portal/signup.html", {"form": form})


@login_required
@require_http_methods(["GET", "POST"])
def consent(request):
    profile = services.get_profile(request.user)
    participation = recruitment.participation_of(profile)
    if participation and participation.outcome == participation.Outcome.SCREENED_OUT:
        return redirect("portal:screened_out")
    if request.method == "POST":
        action = request.POST.get("action")
        if action == "decline" and participation:
            recruitment.screen_out(participation, participation.ScreenOut.DECLINED_CONSENT)
            return redirect("portal:screened_out")
        if action == "agree":
            services.give_consent(profile, request.portal_language)
            messages.success(request, gettext("Thank you: your consent is recorded."))
            return redirect("portal:home" if profile.demographics else "portal:demographics")
        if action == "withdraw":
            return redirect("portal:withdraw")  # asks for confirmation first
    text = content.consent_text(profile.study, request.portal_language)
    standing = profile.consents.active().select_related("text").first()
    return render(
        request,
        "portal/consent.html",
        {
            "consent": text,
            "version": text.version,
            # Agreed to the newest version in the language they agreed in (a participant
            # who switched language since keeps it: ``selectors.has_consent``).
            "has_consent": standing is not None and selectors.has_consent(profile),
            "agreed_version": standing.text.version if standing else None,
            "pseudonym": pseudonym(request.user.pk),
            "participant": participation is not None,
        },
    )


@consent_required
@require_http_methods(["GET", "POST"])
def demographics(request):
    profile = request.profile
    fields = list(selectors.demographic_questions())
    form_class = demographics_forms.demographics_form_class(fields, request.portal_language)
    if request.method == "POST":
        form = form_class(request.POST)
        if form.is_valid():
            try:
                services.save_demographics(profile, demographics_forms.answers(form))
            except AnnotationError as error:
                form.add_error(None, error.message)
            else:
                messages.success(request, gettext("Thank you: your answers are saved."))
                return redirect("portal:home")
    else:
        form = form_class(initial=demographics_forms.initial(fields, profile.demographics))
    rows = demographics_forms.rows(form)
    return render(request, "portal/demographics.html", {"form": form, "rows": rows})


@consent_required
def home(request):
    if request.profile.status == AnnotatorStatus.EXCLUDED and (way_out := _excluded(request)):
        return way_out
    stats = selectors.progress(request.profile)
    percent = round(100 * stats["done"] / stats["quota"]) if stats["quota"] else 100
    participation = recruitment.participation_of(request.profile)
    # A participation made before secrets gets one here, in the session that holds it.
    fresh = admission.issue_secret(participation) if participation else None
    response = render(
        request,
        "portal/home.html",
        {
            "done": stats["done"],
            "quota": stats["quota"],
            "percent": min(percent, 100),
            "finished": stats["done"] >= stats["quota"],
            "participant": participation is not None,
            "resume_link": device.resume_link(request, participation, fresh or "")
            if participation
            else "",
            "excluded": selectors.excluded_message(request.profile)
            if request.profile.status == AnnotatorStatus.EXCLUDED
            else "",
            "first_time": stats["done"] == 0 and not request.session.get("instructions_read"),
        },
    )
    if fresh:
        device.remember(response, participation.study, fresh)
    return response


@login_required
def instructions(request):
    """The newest instructions of the annotator's study, with worked examples; offered
    before the first task."""
    study = services.get_profile(request.user).study
    text = content.instructions(study, request.portal_language)
    request.session["instructions_read"] = text.version
    return render(
        request,
        "portal/instructions.html",
        {
            "text": text.text,
            "version": text.version,
            "k": studies.task_size(study),
            "question": study.question_format,
            "top": study.question_k,
        },
    )


@login_required
@require_http_methods(["GET", "POST"])
def practice_task(request):
    """A practice task in the study's format, checked against the reference; never stored."""
    question = services.get_profile(request.user).study.question_format
    task = practice.practice_task(question)
    context = {"practice": task, "action": reverse("portal:practice"), "question": question}
    if task is None:
        return render(request, "portal/practice.html", context)
    labels = {item.pk: _card_label(i) for i, item in enumerate(task.shown)}
    shown = task.shown
    if request.method == "POST":
        answer = None
        try:
            answer = answers.from_post(request.POST)
            feedback = practice.check(task, answer)
        except AnnotationError as error:
            messages.error(request, error.message)
        else:
            if feedback.matches:
                messages.success(request, gettext("Your order matches the reference."))
            else:
                messages.info(
                    request,
                    gettext("%(placed)s of %(count)s images are where the reference puts them.")
                    % {"placed": feedback.in_place, "count": len(feedback.rows)},
                )
            if isinstance(answer, list) and all(isinstance(i, int) for i in answer):
                by_id = {item.pk: item for item in task.reference}
                shown = [by_id[i] for i in answer]
            context["feedback"] = feedback
            context["rows"] = [dict(row, label=labels[row["item"].pk]) for row in feedback.rows]
    context.update(
        cards=[
            {
                "item": item,
                "id": item.pk,
                "src": item.image.url,
                "label": labels[item.pk],
                "position": i + 1,
            }
            for i, item in enumerate(shown)
        ],
        k=len(shown),
        order=",".join(str(item.pk) for item in shown),
        places=range(1, (task.k or 0) + 1),
    )
    page = "portal/choose.html" if question in answers.CHOICE_PAGES else "portal/practice.html"
    return render(request, page, context)


def _to_home(request, error: AnnotationError):
    messages.error(request, error.message)
    return redirect("portal:home")


def _excluded(request):
    """An excluded crowd participant's way out: screened out (the study's code and return
    link, the reason and the contact on that page); None for anyone else, whose home page
    says why and whom to write to."""
    participation = recruitment.participation_of(request.profile)
    if participation is None:
        return None
    recruitment.screen_out(participation, participation.ScreenOut.EXCLUDED)
    return redirect("portal:screened_out")


def _number(raw: str | None, kind: type, low: float, high: float = float("inf")):
    """A form's optional figure (time spent, window width): None when absent, garbled or out
    of range; what the browser measured is never a reason to refuse a ranking."""
    try:
        value = kind(raw)
    except (TypeError, ValueError):
        return None
    return value if low <= value <= high else None


@never_cache  # back or reload asks again: a task ranked meanwhile is never shown anew
@consent_required
@require_http_methods(["GET", "POST"])
def rank(request):
    profile = request.profile
    if request.method == "POST":
        try:
            task_id = int(request.POST.get("task_id", ""))
        except ValueError:
            messages.error(request, gettext("The form did not say which task it ranks."))
            return redirect("portal:rank")
        try:
            services.submit_ranking(
                profile,
                task_id,
                answers.from_post(request.POST),
                _number(request.POST.get("seconds_spent"), float, 0),
                _number(request.POST.get("viewport_width"), int, 1, services.MAX_VIEWPORT_WIDTH),
                request.portal_language or "",
            )
        except RankedBefore:
            # Stored by an earlier submit whose answer was lost (a restart, a page shown
            # again from history): that ranking stands, and the next task follows.
            messages.success(
                request,
                gettext("Ranking saved. (Your first order of this task was already stored.)"),
            )
        except AnnotationError as error:
            messages.error(request, error.message)
        else:
            messages.success(request, gettext("Ranking saved."))
        return redirect("portal:rank")

    try:
        assignment = next_task(profile)
    except GroupFull as error:
        return turned_away(request, profile, error)
    except AnnotatorExcluded as error:
        return _excluded(request) or _to_home(request, error)
    except AnnotationError as error:
        return _to_home(request, error)
    if assignment is None:
        if recruitment.participation_of(profile):
            return redirect("portal:complete")  # the completion code
        messages.info(request, gettext("No more tasks for you right now: thank you!"))
        return redirect("portal:home")
    cards = [
        {
            "item": card.item,
            "id": card.name,
            "src": card.src,
            "text": card.text,
            "blind": not card.text,
            "label": _card_label(i),
            "position": i + 1,
        }
        for i, card in enumerate(shown_cards(assignment))
    ]
    stats = selectors.progress(profile)
    study = assignment.task.study
    question = study.question_format
    return render(
        request,
        "portal/choose.html" if question in answers.CHOICE_PAGES else "portal/rank.html",
        {
            "assignment": assignment,
            "task": assignment.task,
            "cards": cards,
            "k": len(cards),
            "order": ",".join(str(card["id"]) for card in cards),
            "done": stats["done"],
            "quota": stats["quota"],
            "question": question,
            "places": range(1, (study.question_k or 0) + 1),
        },
    )


def _card_label(index: int) -> str:
    """A card's name on the ranking and practice pages ("Image A", ...), in the
    participant's language."""
    return gettext("Image %(letter)s") % {"letter": chr(ord("A") + index)}
