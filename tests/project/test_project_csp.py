"""The Content-Security-Policy (issue 31, part 6): django-csp puts it on every page (the
portal, the admin, the API, the dashboards, the API docs), scripts only from this site's
files; and no template of the project holds an inline script, an event-handler attribute
or a ``javascript:`` link, which that policy would block (and an injection could ride)."""

import re
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE_DIRS = [
    ROOT / "annotation" / "templates",
    ROOT / "web" / "templates",
    ROOT / "training" / "templates",
    ROOT / "scoring" / "templates",
]
SCRIPT = re.compile(r"<script\b([^>]*)>", re.IGNORECASE)
HANDLER = re.compile(r"<[^>]*\son[a-z]+\s*=", re.IGNORECASE)
JS_URL = re.compile(r"""(href|src|action)\s*=\s*["']?\s*javascript:""", re.IGNORECASE)


def templates() -> list[Path]:
    found = [p for d in TEMPLATE_DIRS if d.is_dir() for p in d.rglob("*.html")]
    assert len(found) > 20, "the scan found the templates"
    return found


def test_no_template_has_an_inline_script_a_handler_or_a_javascript_url():
    problems = []
    for path in templates():
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(ROOT)
        for match in SCRIPT.finditer(text):
            if "src=" not in match[1]:
                problems.append(f"{where}: inline <script{match[1]}>")
        problems += [f"{where}: event handler {m[0][-30:]!r}" for m in HANDLER.finditer(text)]
        problems += [f"{where}: javascript: URL" for _ in JS_URL.finditer(text)]
    assert problems == []


def directives(header: str) -> dict[str, list[str]]:
    parts = (d.strip().split() for d in header.split(";") if d.strip())
    return {p[0]: p[1:] for p in parts}


def assert_policy(response) -> None:
    policy = directives(response["Content-Security-Policy"])
    assert policy["script-src"] == ["'self'"], "no inline script, no eval, no other host"
    assert policy["default-src"] == ["'self'"] and policy["object-src"] == ["'none'"]
    assert policy["frame-ancestors"] == ["'none'"] and policy["base-uri"] == ["'self'"]
    assert "'unsafe-inline'" not in policy["script-src"]


@pytest.fixture
def staff(db):
    user = get_user_model().objects.create_user(
        "boss", password="pw-123456", is_staff=True, is_superuser=True
    )
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize(
    "path",
    ["/login/", "/admin/login/", "/api/", "/api/schema/", "/healthz", "/no-such-page/"],
)
def test_the_policy_is_on_pages_anyone_reaches(db, path):
    assert_policy(Client().get(path))


@pytest.mark.parametrize(
    "path",
    ["/admin/", "/dashboards/runs/", "/api/docs/", "/api/docs/?script=", "/api/schema/"],
)
def test_the_policy_is_on_staff_pages(staff, path):
    response = staff.get(path)
    assert response.status_code == 200, path
    assert_policy(response)


def test_the_api_docs_load_their_script_from_a_file(staff):
    page = staff.get("/api/docs/").content.decode()
    assert not [m for m in SCRIPT.finditer(page) if "src=" not in m[1]]
    assert '<script src="/api/docs/?script="' in page
    script = staff.get("/api/docs/?script=")
    assert script["Content-Type"].startswith("application/javascript")
    assert "SwaggerUIBundle" in script.content.decode()
