"""Ids read from text: only ASCII digits within a bigint are an id (core.ids); "²" or a
30-digit number is no id, answered as not found, never a 500."""

import pytest
from django.urls import reverse

from core.ids import MAX_ID, as_id


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("7", 7), ("007", 7), (str(MAX_ID), MAX_ID), ("0", None), (str(MAX_ID + 1), None),
     ("9" * 30, None), ("²", None), ("١٢", None), ("-3", None), (" 3", None), ("", None),
     (None, None)],
)  # fmt: skip
def test_as_id(raw, expected):
    assert as_id(raw) == expected


@pytest.mark.django_db
@pytest.mark.parametrize("raw", ["²", "9" * 30])
def test_odd_digits_are_no_id_in_the_staff_api_and_the_dashboards(raw, annotator, admin_client):
    staff = annotator("staff", staff=True)
    for listing in ("/api/staff/items/", "/api/staff/tasks/", "/api/staff/rankings/"):
        response = staff.get(listing, {"occupation": raw})
        assert response.status_code == 200, (listing, response.status_code)
    page = admin_client.get(reverse("dashboards:registry"), {"snapshot": raw})
    assert page.status_code == 404
