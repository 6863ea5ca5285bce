"""Pagination for the API's lists: DRF's limit/offset, strict about its parameters."""

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request


class StrictLimitOffsetPagination(LimitOffsetPagination):
    """``?limit=`` (1 or more) and ``?offset=`` (0 or more): anything else is a 400
    naming the parameter, where DRF would silently fall back to its default."""

    minimums = {"limit": 1, "offset": 0}

    def _check(self, request: Request, name: str) -> None:
        raw = request.query_params.get(name)
        if raw is None:
            return
        try:
            value = int(raw)
        except ValueError:
            value = None
        if value is None or value < self.minimums[name]:
            raise ValidationError({name: [f"'{raw}' is not an integer >= {self.minimums[name]}."]})

    def get_limit(self, request: Request) -> int | None:
        self._check(request, self.limit_query_param)
        return super().get_limit(request)

    def get_offset(self, request: Request) -> int:
        self._check(request, self.offset_query_param)
        return super().get_offset(request)

    def get_schema_operation_parameters(self, view) -> list[dict]:
        """DRF's parameters, with the minimums this class enforces."""
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            parameter["schema"]["minimum"] = self.minimums[parameter["name"]]
        return parameters
