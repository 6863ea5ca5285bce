"""Regressions from the schemathesis walk (test_api_fuzz.py): the schema says what
the API really answers, and the API refuses what the schema does not allow."""

import pytest

from tests.schema_helpers import served_schema

METHODS = {"get", "post", "put", "patch", "delete"}


@pytest.fixture(scope="module")
def openapi() -> dict:
    return served_schema()  # staff only: asked as an unsaved staff user


def _operations(openapi: dict):
    for path, item in openapi["paths"].items():
        for method, operation in item.items():
            if method in METHODS:
                yield path, method, operation


def test_every_operation_documents_the_errors_drf_answers(openapi):
    # Found: 400, 403 and 404 answered by every operation were undocumented.
    for path, method, operation in _operations(openapi):
        where, responses = f"{method.upper()} {path}", operation["responses"]
        assert "403" in responses, where
        if "{" in path:
            assert "404" in responses, where
        if "requestBody" in operation:
            assert {"400", "415"} <= set(responses), where
        query = [p for p in operation.get("parameters", []) if p["in"] == "query"]
        if query:
            assert "400" in responses, where
    error = openapi["components"]["schemas"]["Error"]
    assert error["required"] == ["detail"]


def test_request_bodies_are_json_only_except_the_log_in(openapi):
    # Found: form encodings were advertised, in which null and lists cannot be sent.
    for path, _method, operation in _operations(openapi):
        if "requestBody" in operation and path != "/api/auth/token/":
            assert set(operation["requestBody"]["content"]) == {"application/json"}, path


def test_a_form_encoded_ranking_is_refused_with_415(annotator, make_tasks):
    make_tasks(1)
    client = annotator("ann")
    task = client.post("/api/tasks/next/").json()
    order = [item["id"] for item in task["items"]]
    response = client.post(f"/api/tasks/{task['id']}/ranking/", {"order": order})  # multipart
    assert response.status_code == 415
    assert "Unsupported media type" in response.json()["detail"]


def test_the_log_in_schema_requires_non_blank_credentials(openapi):
    # Found: a blank username or password was schema-valid but refused with 400.
    body = openapi["paths"]["/api/auth/token/"]["post"]["requestBody"]["content"]
    ref = body["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    fields = openapi["components"]["schemas"][ref]["properties"]
    assert fields["username"]["minLength"] == 1 and fields["password"]["minLength"] == 1
    assert "token" not in fields  # read-only: the answer's, not the request's


def test_exports_document_the_media_types_they_stream(openapi):
    # Found: application/jsonl and text/csv were documented as application/json.
    rankings = openapi["paths"]["/api/export/rankings/"]["get"]
    assert set(rankings["responses"]["200"]["content"]) == {"application/jsonl", "text/csv"}
    pairs = openapi["paths"]["/api/export/pairs/"]["get"]
    assert set(pairs["responses"]["200"]["content"]) == {"application/jsonl"}
    formats = {p["name"]: p for p in pairs["parameters"]}["format"]["schema"]["enum"]
    assert formats == ["jsonl"]


def test_export_answers_with_the_documented_media_type(annotator):
    staff = annotator("boss", staff=True)
    assert staff.get("/api/export/rankings/", {"format": "csv"})["Content-Type"] == "text/csv"
    assert staff.get("/api/export/pairs/")["Content-Type"] == "application/jsonl"
    assert staff.get("/api/export/pairs/", {"format": "csv"}).status_code == 400


@pytest.mark.parametrize(
    "query", [{"offset": "abc"}, {"offset": "-1"}, {"limit": "0"}, {"limit": "x"}]
)
def test_staff_lists_refuse_a_bad_limit_or_offset(annotator, make_tasks, query):
    # Found: DRF's LimitOffsetPagination silently used its default for these.
    make_tasks(2)
    response = annotator("boss", staff=True).get("/api/staff/tasks/", query)
    assert response.status_code == 400
    (name,) = query
    assert name in response.json()


def test_staff_lists_page_with_a_good_limit_and_offset(annotator, make_tasks, openapi):
    tasks = make_tasks(3)
    page = annotator("boss", staff=True).get("/api/staff/tasks/", {"limit": 1, "offset": 1})
    assert page.status_code == 200
    assert [t["id"] for t in page.json()["results"]] == [tasks[1].pk]
    params = {p["name"]: p for p in openapi["paths"]["/api/staff/tasks/"]["get"]["parameters"]}
    assert params["limit"]["schema"]["minimum"] == 1
    assert params["offset"]["schema"]["minimum"] == 0


def test_a_ranking_order_is_documented_as_a_list_of_item_ids(openapi):
    # Found: `order` had no type, so null was schema-valid (and refused).
    body = openapi["paths"]["/api/tasks/{task_id}/ranking/"]["post"]["requestBody"]
    ref = body["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    order = openapi["components"]["schemas"][ref]["properties"]["order"]
    assert order["type"] == "array" and order["items"] == {"type": "integer"}
    assert order["minItems"] == 1 and order["uniqueItems"] is True
