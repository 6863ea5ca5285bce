"""The API's request bodies: one JSON parser that refuses hostile JSON with a 400 (or a
413) before any view runs.

``StrictJSONParser`` is every API view's JSON parser (``DEFAULT_PARSER_CLASSES``, and the
log-in view's own list). Over DRF's ``JSONParser`` it refuses, each with a message that
says what is wrong:

- a body over Django's ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (413, where Django's own check
  would end in a 400 with a logged traceback);
- nesting deeper than ``MAX_DEPTH`` (counted before parsing, so 5,000 ``[`` never reach
  the parser's recursion);
- a body in any charset but UTF-8 (415): JSON exchanged between systems is UTF-8 (RFC
  8259), and another charset hides brackets from the count (``+AFs-`` is ``[`` in UTF-7)
  or names a codec that is no charset (``rot13``, a 500 before);
- ``NaN``, ``Infinity``, ``-Infinity`` and numbers too big for a float (``1e999``), which
  are not finite;
- an object naming one key twice (``json`` keeps the last silently).

``ParsedFirst``, the first base of every API view (a test walks the URL conf for it),
makes the parse happen for every request that may carry a body, after authentication,
permissions and throttles, before the view's handler.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from rest_framework import exceptions, status
from rest_framework.parsers import JSONParser

MAX_DEPTH = 16
"""The deepest nesting of arrays and objects a body may have; the API's bodies need 3."""

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = re.compile(rb"[\[\]{}]")
_SAFE = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})


class BodyTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is too large."
    default_code = "body_too_large"


def depth(raw: bytes) -> int:
    """The deepest nesting of ``[`` and ``{`` in a JSON text, strings left out."""
    deepest = level = 0
    for bracket in _BRACKETS.findall(_STRING.sub(b'""', raw)):
        level += 1 if bracket in (b"[", b"{") else -1
        deepest = max(deepest, level)
    return deepest


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is too large a number")
    return value


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        twice = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise ValueError(f"the key {twice!r} is given twice")
    return result


UTF8 = frozenset({"utf-8", "utf8", "utf_8", "u8"})


def loads(raw: bytes, encoding: str = "utf-8") -> Any:
    """A JSON body as Python, or ``ParseError`` saying why it is refused
    (``UnsupportedMediaType`` for a charset other than UTF-8)."""
    if encoding.strip().lower() not in UTF8:
        raise exceptions.UnsupportedMediaType(
            f"application/json; charset={encoding[:40]}",
            detail="JSON bodies are UTF-8: send them without a charset, or charset=utf-8.",
        )
    if (found := depth(raw)) > MAX_DEPTH:
        raise exceptions.ParseError(
            f"JSON parse error - nested {found} levels deep; at most {MAX_DEPTH} are accepted."
        )
    try:
        return json.loads(
            raw.decode(encoding),
            parse_constant=_no_constants,
            parse_float=_finite,
            object_pairs_hook=_no_duplicate_keys,
        )
    except (ValueError, RecursionError) as error:  # JSONDecodeError and UnicodeError too
        raise exceptions.ParseError(f"JSON parse error - {error}") from None


class StrictJSONParser(JSONParser):
    """DRF's JSON parser with the refusals above."""

    def parse(self, stream, media_type=None, parser_context=None):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        raw = stream.read() if limit is None else stream.read(limit + 1)
        if limit is not None and len(raw) > limit:
            raise BodyTooLarge(f"The request body is over {limit} bytes.")
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        return loads(raw, encoding)


class ParsedFirst:
    """Every API view's first base: once DRF has authenticated the request and checked its
    permissions and throttles (``initial``), the body of a method that carries one is
    parsed, before the handler runs. DRF parses lazily, on the first ``request.data``, so a
    view that never reads its body would otherwise act on a hostile one, or on one in a
    format it does not take (415); after the throttles, so that nobody unauthenticated
    makes the server parse a body for a view they may not use."""

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        if request.method not in _SAFE:
            try:
                request.data  # noqa: B018 - parsed now, refused now
            except RequestDataTooBig:  # DRF reads ``request.body``, which Django bounds
                limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
                raise BodyTooLarge(f"The request body is over {limit} bytes.") from None
