"""Item images on local disk, served by Django (``STEREORANK_SERVE_MEDIA``): images only,
each with its own content type, never sniffed, never a page.

Only files whose extension is an image format the import accepts are served
(``annotation.catalogue.images.CONTENT_TYPES``, and ``.jpeg`` of older imports); any
other file under ``MEDIA_ROOT`` is a 404. The answer carries the extension's content
type, ``X-Content-Type-Options: nosniff`` (a browser never reads an image as HTML or
script) and a ``sandbox`` Content-Security-Policy of its own, in case one is opened
as a page.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from django.http import Http404, HttpRequest, HttpResponse
from django.views.static import serve

from annotation.catalogue.images import CONTENT_TYPES

SERVED = {**CONTENT_TYPES, ".jpeg": "image/jpeg"}
MEDIA_POLICY = "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; sandbox"


def serve_media(request: HttpRequest, path: str, document_root: str) -> HttpResponse:
    """The image at ``path`` under ``document_root``; 404 for anything but an image."""
    content_type = SERVED.get(PurePosixPath(path).suffix.lower())
    if content_type is None:
        raise Http404("not an image")
    response = serve(request, path, document_root=document_root)
    response["Content-Type"] = content_type
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = MEDIA_POLICY
    return response
