"""The URL conf walked: every pattern's full regex with its view, for tests that must
cover every route (the hostile bodies, the id patterns) without a list to keep."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from django.urls import URLPattern, URLResolver, get_resolver

_GROUP = re.compile(r"\(\?P<(\w+)>((?:[^()]|\([^()]*\))*)\)")


def patterns() -> Iterator[tuple[str, Callable]]:
    """(the route's whole regex, its view) for every pattern of the URL conf."""

    def walk(resolver: URLResolver, prefix: str) -> Iterator[tuple[str, Callable]]:
        for entry in resolver.url_patterns:
            regex = prefix + entry.pattern.regex.pattern.lstrip("^")
            if isinstance(entry, URLResolver):
                yield from walk(entry, regex.removesuffix("\\Z").removesuffix("$"))
            elif isinstance(entry, URLPattern):
                yield regex, entry.callback

    yield from walk(get_resolver(), "")


def api_views() -> Iterator[tuple[str, type, set[str]]]:
    """(an example path, the DRF view class, the methods it takes that carry a body) for
    every API route: each named group filled with ``1``."""
    for regex, callback in patterns():
        view = getattr(callback, "cls", None)
        if view is None or not hasattr(view, "parser_classes"):
            continue
        actions = getattr(callback, "actions", None)  # a viewset's route
        named = view.http_method_names
        methods = set(actions) if actions else {m for m in named if hasattr(view, m)}
        methods &= {"post", "put", "patch", "delete"}
        if not methods or "(?P<format>" in regex:
            continue
        path = _GROUP.sub("1", regex)
        path = path.removesuffix("\\Z").removesuffix("$").replace("\\", "")
        yield "/" + path, view, methods
