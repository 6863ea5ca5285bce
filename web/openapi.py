"""The OpenAPI schema's error responses, documented once for every operation.

drf-spectacular documents the success responses a view declares; the errors DRF
itself answers are the same everywhere, so a postprocessing hook adds them:

- 403 ``Error`` everywhere: no or bad credentials (the first authenticator is the
  session one, which has no ``WWW-Authenticate`` challenge, so DRF answers 403,
  never 401), or not allowed;
- 404 ``Error`` where the path, the query or the body can name an object (no such
  object: the project's ``NotFound`` refusals);
- 400 ``ValidationError`` where the operation takes a body or query parameters;
- 409 ``Error`` on writes (the project's ``Conflict`` refusals: already done, nothing
  to roll back, no rankings yet);
- 415 ``Error`` where it takes a body (a media type DRF cannot parse).

A view that declares one of these itself keeps its own.
"""

ERROR = {
    "type": "object",
    "properties": {"detail": {"type": "string"}},
    "required": ["detail"],
}
VALIDATION_ERROR = {
    "type": "object",
    "description": "A message per field (a list of strings, or nested for nested "
    "fields), or a `detail` message.",
    "additionalProperties": {},
}
METHODS = {"get", "put", "post", "patch", "delete", "head", "options", "trace"}


def _response(description: str, schema_name: str) -> dict:
    return {
        "description": description,
        "content": {
            "application/json": {"schema": {"$ref": f"#/components/schemas/{schema_name}"}}
        },
    }


def document_error_responses(result: dict, generator, request, public) -> dict:
    """drf-spectacular postprocessing hook: add the errors DRF answers to each operation."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas.setdefault("Error", ERROR)
    schemas.setdefault("ValidationError", VALIDATION_ERROR)
    for operations in result.get("paths", {}).values():
        for method, operation in operations.items():
            if method not in METHODS:
                continue
            parameters = operation.get("parameters", [])
            errors = {"403": _response("No or bad credentials, or not allowed.", "Error")}
            takes_input = "requestBody" in operation or any(
                p.get("in") == "query" for p in parameters
            )
            if takes_input or any(p.get("in") == "path" for p in parameters):
                errors["404"] = _response("No such object.", "Error")
            if takes_input:
                errors["400"] = _response("Invalid input.", "ValidationError")
            if method in {"post", "put", "patch", "delete"}:
                errors["409"] = _response("Conflicts with the current state.", "Error")
            if "requestBody" in operation:
                errors["415"] = _response("Unsupported media type.", "Error")
            responses = operation.setdefault("responses", {})
            for status, response in errors.items():
                responses.setdefault(status, response)
    return result
