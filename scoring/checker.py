"""The prompt checker page: paste prompts, see scores against the threshold, get rewrites.

One HTML page for the scoring role (log in as usual); its script
(``static/scoring/check.js``, no build step) calls ``/api/score/`` and, for each
flagged prompt, ``/api/optimise/`` with the session, so the page and the API
share every check, limit and message.
"""

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from scoring import selectors, services
from scoring.roles import has_scoring_role


@login_required
def prompt_checker(request: HttpRequest) -> HttpResponse:
    """The checker for the scoring role; a page that says how to get the role otherwise."""
    if not has_scoring_role(request.user):
        return render(request, "scoring/check.html", {"refused": True}, status=403)
    limits = services.limits()
    return render(
        request,
        "scoring/check.html",
        {
            "max_prompts": limits["MAX_PROMPTS"],
            "max_chars": limits["MAX_CHARS"],
            "active_version": selectors.active_version(),
        },
    )
