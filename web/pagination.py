"""Pagination for the API's lists: DRF's limit/offset, strict about its parameters.

A page holds at most ``MAX_LIMIT`` rows (``?limit=`` above it is a 400 saying so, not a
page silently cut: a client asking for everything learns it must page); ``?offset=``
stops at ``MAX_OFFSET`` (past any list this project holds, and inside PostgreSQL's
bigint, which a bigger number would overflow into a 500)."""

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request

MAX_LIMIT = 1000
MAX_OFFSET = 1_000_000_000


class StrictLimitOffsetPagination(LimitOffsetPagination):
    """``?limit=`` (1 to ``MAX_LIMIT``) and ``?offset=`` (0 to ``MAX_OFFSET``): anything
    else is a 400 naming the parameter and its range, where DRF would silently fall back
    to its default (or clamp)."""

    max_limit = MAX_LIMIT
    ranges = {"limit": (1, MAX_LIMIT), "offset": (0, MAX_OFFSET)}

    def _check(self, request: Request, name: str) -> None:
        raw = request.query_params.get(name)
        if raw is None:
            return
        low, high = self.ranges[name]
        try:
            value = int(raw)
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise ValidationError({name: [f"'{raw}' is not an integer from {low} to {high}."]})

    def get_limit(self, request: Request) -> int | None:
        self._check(request, self.limit_query_param)
        return super().get_limit(request)

    def get_offset(self, request: Request) -> int:
        self._check(request, self.offset_query_param)
        return super().get_offset(request)

    def get_schema_operation_parameters(self, view) -> list[dict]:
        """DRF's parameters, with the ranges this class enforces."""
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            low, high = self.ranges[parameter["name"]]
            parameter["schema"].update(minimum=low, maximum=high)
        return parameters
