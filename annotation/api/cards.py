"""A blinded card's image, served under the participant's own name for it
(``annotation.assignment.blinding``): ``/api/cards/<name>/``.

The page (its session) and the API (its token) load the same URL. The name is resolved
among the images of the signed-in participant's live reservations only: another
participant's name, a name of a task no longer theirs, or no name at all is a 404, as
an image that does not exist. The answer names nothing: no file name
(no ``Content-Disposition``), the content type of the stored image's format,
``nosniff`` and a sandboxing Content-Security-Policy as the media view's, and
``private`` caching (the URL is the participant's own).
"""

from __future__ import annotations

from pathlib import PurePosixPath

from django.http import HttpResponse
from django.utils.translation import gettext
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.views import APIView

from annotation.api.language import InTheirLanguage
from annotation.assignment import selectors as task_selectors
from annotation.catalogue.images import CONTENT_TYPES
from annotation.participants import services
from core.api_bodies import ParsedFirst

# Older imports kept ``.jpeg``; the media view serves it too.
SERVED = {**CONTENT_TYPES, ".jpeg": "image/jpeg"}
POLICY = "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; sandbox"
# The image behind a name never changes; the browser keeps it for the task's time.
CACHE_CONTROL = "private, max-age=3600"


class CardImageView(ParsedFirst, InTheirLanguage, APIView):
    @extend_schema(
        responses={(200, "image/*"): OpenApiTypes.BINARY, 404: None},
        description="A card's image on a blinded task (a validation study's), under the "
        "name the task gave the signed-in participant; anyone else's name is a 404.",
    )
    def get(self, request, name: int):
        profile = services.get_profile(request.user)
        item = task_selectors.card_item(profile, name)
        content_type = item and SERVED.get(PurePosixPath(item.image.name).suffix.lower())
        if content_type is None:
            raise NotFound(gettext("No such image."))
        try:
            with item.image.open("rb") as image:
                body = image.read()
        except FileNotFoundError:
            raise NotFound(gettext("No such image.")) from None
        response = HttpResponse(body, content_type=content_type)
        response["X-Content-Type-Options"] = "nosniff"
        response["Content-Security-Policy"] = POLICY
        response["Cache-Control"] = CACHE_CONTROL
        return response
