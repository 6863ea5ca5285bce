"""The prompt checker page: paste prompts, see scores against the threshold, get rewrites.

One HTML page for the scoring role (log in as usual); its script
(``static/scoring/check.js``, no build step) calls ``/api/score/`` and, for each
flagged prompt, ``/api/optimise/`` with the session, so the page and the API
share every check, limit and message. The page says which encoder serves the active
version, or, when its quantized copy is not gated, that it is refused and why.
"""

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from scoring import selectors, services, serving
from scoring.roles import has_scoring_role


@login_required
def prompt_checker(request: HttpRequest) -> HttpResponse:
    """The checker for the scoring role; a page that says how to get the role otherwise."""
    if not has_scoring_role(request.user):
        return render(request, "scoring/check.html", {"refused": True}, status=403)
    limits = services.limits()
    active = selectors.active_checkpoint()
    described = serving.describe(active, selectors.encoder_gates(active)) if active else None
    return render(
        request,
        "scoring/check.html",
        {
            "max_prompts": limits["MAX_PROMPTS"],
            "max_chars": limits["MAX_CHARS"],
            "active_version": active.version if active else None,
            "serving": described,
        },
    )
