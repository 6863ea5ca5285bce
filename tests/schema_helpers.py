"""The OpenAPI schema as ``/api/schema/`` serves it to staff, for tests that read it.

The schema is staff-only (issue 31), so a test that needs it without a staff login of
its own (a module-level fixture, schemathesis at collection time) asks the real view
as an unsaved staff user: no database, no HTTP client, the view's own answer.
"""

from __future__ import annotations

import json

OPENAPI_JSON = "application/vnd.oai.openapi+json"


def served_schema() -> dict:
    """The JSON schema ``SpectacularAPIView`` answers a staff user."""
    from django.contrib.auth import get_user_model
    from drf_spectacular.views import SpectacularAPIView
    from rest_framework.test import APIRequestFactory, force_authenticate

    request = APIRequestFactory().get("/api/schema/", HTTP_ACCEPT=OPENAPI_JSON)
    force_authenticate(request, user=get_user_model()(username="schema-reader", is_staff=True))
    response = SpectacularAPIView.as_view()(request)
    assert response.status_code == 200, response.status_code
    return json.loads(response.render().content)
