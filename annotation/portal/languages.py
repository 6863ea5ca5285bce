"""The language a participant reads the portal in (issue 39).

A study offers some of the installation's languages (``settings.LANGUAGES``), the first its
default. A participant's language is, in this order: the ``lang`` parameter of the request
(the entry link's, or the language switch's), the one they chose before (kept on their
participation), the browser's ``Accept-Language`` among the study's languages, then the
study's default. An unknown or unoffered ``lang``
falls through to the next, with no error. Staff pages and pages of no study stay in
English (the source language).
"""

from __future__ import annotations

from django.conf import settings
from django.utils import translation
from django.utils.cache import patch_vary_headers
from django.utils.translation.trans_real import parse_accept_lang_header


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
    its query (an entry link's crowd ids) and ``lang``, the current one marked; none for a
    study of one language."""
    if len(offered) < 2:
        return []
    names = dict(settings.LANGUAGES)
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
    """Activates the participant's language for a portal page (``choose``) and keeps an
    explicit choice on their participation.

    Only the portal's own views (the ``portal`` URL namespace) are touched: staff pages, the
    API, media and health checks stay in English and cost no query. The study is the one an
    entry link's slug names, else the participation's; a page of neither (log-in, sign-up)
    stays in English. An anonymous visitor's choice lives in the URL (the entry link's page
    posts back to itself, ``lang`` included), so nothing is stored for them. The language is
    deactivated after every request, whatever happens in it."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        translation.deactivate()  # nothing from an earlier request on this thread
        try:
            response = self.get_response(request)
            language = getattr(request, "portal_language", None)
            if language is not None:
                if request.method == "POST" and getattr(request, "portal_entry", False):
                    _keep_on_new_participation(request, language)
                if response.status_code < 400:  # refusal pages are English (web.views)
                    response.headers.setdefault("Content-Language", language)
                patch_vary_headers(response, ["Accept-Language"])
            return response
        finally:
            translation.deactivate()

    def process_view(self, request, view_func, view_args, view_kwargs):
        match = getattr(request, "resolver_match", None)
        if match is None or match.namespace != "portal":
            return None
        request.portal_language = None  # a portal page of no study (log-in): English
        participation, study, entry = _participation_and_study(request, view_kwargs)
        if study is None:
            return None
        requested = request.GET.get("lang", "")
        kept = participation.language if participation is not None else ""
        accept = request.META.get("HTTP_ACCEPT_LANGUAGE", "")
        language = choose(requested, kept, accept, study.languages)
        if requested == language and participation is not None and kept != language:
            type(participation).objects.filter(pk=participation.pk).update(language=language)
        translation.activate(language)
        request.LANGUAGE_CODE = request.portal_language = language
        request.portal_languages = switch_links(
            study.languages, language, request.path, request.GET
        )
        request.portal_entry = entry
        return None


def _participation_and_study(request, view_kwargs):
    """(the participation whose language counts, the study, whether this is an entry
    page): an entry link's slug names the study, and the participant's participation counts
    only when it is in that study."""
    from annotation.models import Study
    from annotation.models.studies import Participation

    participation = None
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated and not user.is_staff:
        participation = (
            Participation.objects.filter(annotator__user=user).select_related("study").first()
        )
    slug = view_kwargs.get("slug")
    if slug:
        if participation is not None and participation.study.slug == slug:
            return participation, participation.study, False
        return None, Study.objects.filter(slug=slug).first(), True
    if participation is not None:
        return participation, participation.study, False
    return None, None, False


def _keep_on_new_participation(request, language: str) -> None:
    """A participation made by this request (an entry link's POST) starts in the language
    its consent page was read in."""
    from annotation.models.studies import Participation

    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated and not user.is_staff:
        Participation.objects.filter(annotator__user=user, language="").update(language=language)
