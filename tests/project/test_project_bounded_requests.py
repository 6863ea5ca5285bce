"""Bounded requests (issue 31, part 8): every numeric query parameter has a range and a
number out of it is a 400 that says the range; the OpenAPI schema and its docs pages are
for staff only. Tried as an attacker would: a page of a billion rows, ten thousand
bootstrap draws, an id past PostgreSQL's bigint, the API map fetched anonymously."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from annotation.api.params import MAX_N_BOOT
from web.pagination import MAX_LIMIT


@pytest.fixture
def staff(annotator):
    return annotator("boss", staff=True)


@pytest.mark.parametrize(
    ("query", "says"),
    [
        (
            "/api/staff/quality/?n_boot=10000",
            "n_boot: '10000' is not a whole number from 0 to 2000.",
        ),
        ("/api/staff/quality/?n_boot=-1", "n_boot: '-1' is not a whole number from 0 to 2000."),
        ("/api/staff/studies/val/validation/?n_boot=10000", "n_boot: '10000' is not a whole"),
        ("/api/staff/quality/?page=0", "page: '0' is not a whole number from 1 to 1000000."),
        ("/api/staff/quality/?page=10000000", "page: '10000000' is not a whole number from 1"),
        (f"/api/staff/rankings/?task={2**63}", f"task: '{2**63}' is not a whole number from 1 to"),
    ],
)
def test_out_of_range_is_a_400_that_says_the_range(staff, query, says):
    response = staff.get(query)
    assert response.status_code == 400, response.content
    assert response.json()["detail"].startswith(says)


def test_n_boot_is_capped_below_the_old_10000():
    assert MAX_N_BOOT == 2000


@pytest.mark.parametrize(
    ("query", "says"),
    [
        (f"?limit={10**9}", f"'{10**9}' is not an integer from 1 to {MAX_LIMIT}."),
        ("?limit=0", f"'0' is not an integer from 1 to {MAX_LIMIT}."),
        (f"?offset={2**64}", f"'{2**64}' is not an integer from 0 to 1000000000."),
    ],
)
def test_a_page_has_a_documented_maximum(staff, query, says):
    response = staff.get("/api/staff/rankings/" + query)
    assert response.status_code == 400
    name = query[1:].split("=")[0]
    assert response.json()[name] == [says]
    assert staff.get(f"/api/staff/rankings/?limit={MAX_LIMIT}").status_code == 200


def test_the_schema_documents_the_ranges(staff):
    schema = staff.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    params = {p["name"]: p for p in schema["paths"]["/api/staff/rankings/"]["get"]["parameters"]}
    assert params["limit"]["schema"]["maximum"] == MAX_LIMIT
    quality = {p["name"]: p for p in schema["paths"]["/api/staff/quality/"]["get"]["parameters"]}
    assert quality["n_boot"]["schema"]["maximum"] == MAX_N_BOOT


@pytest.mark.parametrize(
    ("query", "field"),
    [(f"?a={2**40}&b=1", "a"), ("?a=1&b=0", "b")],
)
def test_version_numbers_are_bounded(staff, query, field):
    response = staff.get("/api/training/checkpoints/compare/" + query)
    assert response.status_code == 400 and field in response.json()


@pytest.mark.parametrize("path", ["/api/schema/", "/api/docs/", "/api/docs/?script="])
def test_the_schema_and_docs_refuse_anonymous_and_non_staff_users(db, path):
    assert Client().get(path).status_code in (401, 403)
    user = get_user_model().objects.create_user("ann", password="pw-123456")
    participant = Client()
    participant.force_login(user)
    assert participant.get(path).status_code == 403
    user.is_staff = True
    user.save()
    participant.force_login(user)  # staff log in again, with their second factor
    assert participant.get(path).status_code == 200
