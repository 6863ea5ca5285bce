"""The project's own middleware: requests refused before any view, and refusals given a
page.

- ``AsciiDigits``: an id is ASCII digits (``core.ids``). A path or query value holding a
  decimal digit of another script (``١``, ``１``, ``߁``) is refused here, once for every door:
  Django's ``int()`` reads them, so ``/admin/.../ranking/١/change/`` opened ranking 1 and
  ``?id__exact=١`` filtered on it. A path: 404; a query: 400.
- ``StyledRefusals``: a bare 405 outside ``/api/`` (``require_POST``'s) becomes a page.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse

from web.views import API_PREFIX, not_allowed, not_found


def foreign_digit(text: str) -> bool:
    """Whether ``text`` holds a decimal digit that is not one of ASCII's ten."""
    return any(ch.isdecimal() and not ("0" <= ch <= "9") for ch in text)


class AsciiDigits:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if foreign_digit(request.path):
            return not_found(request, None)
        if any(foreign_digit(v) for values in request.GET.lists() for v in values[1]):
            message = "Ids and numbers in the query are written in ASCII digits (0-9)."
            if request.path.startswith(API_PREFIX):
                return JsonResponse({"detail": message}, status=400)
            return HttpResponseBadRequest(message)
        return self.get_response(request)


class StyledRefusals:
    """A bare 405 outside /api/ becomes ``not_allowed``'s page."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code != 405 or request.path.startswith(API_PREFIX):
            return response
        html = response.get("Content-Type", "").startswith("text/html")
        if html and (response.streaming or response.content):
            return response  # a page already
        return not_allowed(request, response)
