"""The language a participant reads the portal in (issue 39).

A study offers some of the installation's languages (``settings.LANGUAGES``), the first its
default. A participant's language is, in this order: the ``lang`` parameter of the request
(the entry link's, or the language switch's), the one they chose before (kept on their
participation, or in the session before they have one), the browser's ``Accept-Language``
among the study's languages, then the study's default. An unknown or unoffered ``lang``
falls through to the next, with no error. Staff pages and pages of no study stay in
English (the source language).
"""

from __future__ import annotations

from django.conf import settings
from django.utils import translation
from django.utils.translation.trans_real import parse_accept_lang_header

SESSION_KEY = "portal_language"
# Paths never in a participant's language: the staff side and the API's staff routes.
STAFF_PATHS = ("/dashboards/", "/admin/", "/api/", "/check/")


def available() -> dict[str, str]:
    """The installation's languages: code -> name in itself."""
    return dict(settings.LANGUAGES)


def choose(requested: str, kept: str, accept: str, offered: list[str]) -> str:
    """The language to show, of ``offered`` (a study's languages, the first the default)."""
    if requested in offered:
        return requested
    if kept in offered:
        return kept
    for code, _quality in parse_accept_lang_header(accept or ""):
        code = code.lower()
        for candidate in (code, code.split("-")[0]):
            if candidate in offered:
                return candidate
    return offered[0] if offered else settings.LANGUAGE_CODE


def switch_links(offered: list[str], current: str, path: str, query) -> list[dict]:
    """The language switch: each offered language named in itself, linked to this page with
    its query (an entry link's crowd ids) and ``lang``, the current one marked."""
    names = available()
    links = []
    for code in offered:
        params = query.copy()
        params["lang"] = code
        links.append(
            {
                "code": code,
                "name": names.get(code, code),
                "current": code == current,
                "href": f"{path}?{params.urlencode()}",
            }
        )
    return links


class ParticipantLanguage:
    """Activates the participant's language for the request (``choose``) and keeps an
    explicit choice on their participation (or in the session until they have one).

    The study is the participation's, or the one named by an entry link's slug; with
    neither (the log-in page, staff pages) the request stays in English."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        language = getattr(request, "portal_language", None)
        if language is not None:
            if request.method == "POST" and getattr(request, "portal_entry", False):
                _keep_on_new_participation(request, language)
            response.headers.setdefault("Content-Language", language)
            translation.deactivate()
        return response

    def process_view(self, request, view_func, view_args, view_kwargs):
        if request.path.startswith(STAFF_PATHS):
            return None
        participation, study = _participation_and_study(request, view_kwargs)
        if study is None:
            return None
        requested = request.GET.get("lang", "")
        kept = (participation.language if participation else "") or request.session.get(
            SESSION_KEY, ""
        )
        language = choose(
            requested, kept, request.META.get("HTTP_ACCEPT_LANGUAGE", ""), study.languages
        )
        if requested == language:
            request.session[SESSION_KEY] = language
            if participation is not None and participation.language != language:
                type(participation).objects.filter(pk=participation.pk).update(language=language)
        translation.activate(language)
        request.LANGUAGE_CODE = request.portal_language = language
        request.portal_languages = switch_links(
            study.languages, language, request.path, request.GET
        )
        request.portal_entry = participation is None
        return None


def _participation_and_study(request, view_kwargs):
    from annotation.models import Study
    from annotation.models.studies import Participation

    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated and not user.is_staff:
        participation = (
            Participation.objects.filter(annotator__user=user).select_related("study").first()
        )
        if participation is not None:
            return participation, participation.study
    slug = view_kwargs.get("slug")
    if slug:
        return None, Study.objects.filter(slug=slug).first()
    return None, None


def _keep_on_new_participation(request, language: str) -> None:
    """A participation made by this request (an entry link's POST) starts in the language
    its consent page was read in."""
    from annotation.models.studies import Participation

    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated and not user.is_staff:
        Participation.objects.filter(annotator__user=user, language="").update(language=language)
