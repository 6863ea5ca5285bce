"""The participant API answers in the participant's portal language (issue 39)."""

from __future__ import annotations

from django.utils import translation

from annotation.participants import services


class InTheirLanguage:
    """A participant API view's answer, its refusals included, in the participant's
    portal language: their participation's (read with the token, ``accounts.tokens``; a
    query for a session), English without one. Placed after ``ParsedFirst`` among the
    bases, so that a body refused is refused in it too; the portal's language middleware
    deactivates it after the request."""

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        profile = getattr(request.user, "annotator", None)  # None: staff or anonymous
        if profile is None:
            return
        language = getattr(profile, "portal_language", None)
        if language is None:
            language = services.participation_language(profile)
        if language:
            translation.activate(language)
