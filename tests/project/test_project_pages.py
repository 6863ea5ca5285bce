"""Project-level pages: the API docs offline, the API root, the plain error pages."""

import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.test import Client
from django.urls import path

import web.urls

ROOT = Path(__file__).resolve().parents[2]


class _AssetLinks(HTMLParser):
    """Every URL a page makes the browser fetch: script src, link href, img src."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        wanted = {"script": "src", "link": "href", "img": "src"}.get(tag)
        for name, value in attrs:
            if name == wanted and value:
                self.urls.append(value)


def _asset_urls(html: str) -> list[str]:
    parser = _AssetLinks()
    parser.feed(html)
    return parser.urls


@pytest.mark.django_db
def test_api_docs_load_only_local_static_assets_and_they_are_served(settings, admin_client):
    # Serve from the apps' static folders, as the embedded mode does (no collectstatic).
    settings.WHITENOISE_USE_FINDERS = True
    client = admin_client  # the docs are for staff
    page = client.get("/api/docs/")
    assert page.status_code == 200
    urls = _asset_urls(page.content.decode())
    scripts = [u for u in urls if u.endswith(".js")]
    assert len(scripts) >= 2, urls  # the Swagger UI bundle and its preset
    for url in urls:
        parts = urlsplit(url)
        assert not parts.scheme and not parts.netloc, f"{url} is fetched from another host"
        # The Swagger UI's set-up script is the docs view's own (no inline script: the CSP).
        static = parts.path.startswith("/" + settings.STATIC_URL.lstrip("/"))
        assert static or url == "/api/docs/?script=", url
        asset = client.get(parts.path)
        assert asset.status_code == 200, url
        body = b"".join(asset.streaming_content) if asset.streaming else asset.content
        assert len(body) > 100, url


def boom(request):
    raise RuntimeError("an unexpected bug")


# The project's URLs plus one view that fails, for the 500 page (@pytest.mark.urls).
urlpatterns = [path("boom/", boom), *web.urls.urlpatterns]
handler404 = web.urls.handler404
handler500 = web.urls.handler500

# Django's debug 404 names the URLconf and lists every pattern (staff pages link the
# dashboards themselves, so those are no sign of it).
ROUTE_LISTING = (b"URLconf", b"api/training/", b"api/staff/", b"admin/")


@pytest.mark.parametrize("staff", [False, True])
def test_unknown_urls_get_the_plain_404_page(annotator, staff):
    client = Client()
    client.force_login(annotator("ann", staff=staff).profile.user)
    response = client.get("/no-such-page/")
    assert response.status_code == 404
    assert "404.html" in [t.name for t in response.templates]
    assert b"Page not found" in response.content
    assert b"portal/portal.css" in response.content  # the portal's look
    for route in ROUTE_LISTING:
        assert route not in response.content


def test_unknown_api_urls_answer_json_404(annotator):
    response = annotator("ann").get("/api/no-such-endpoint/")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"detail": "Not found."}


@pytest.mark.urls(__name__)
def test_a_bug_gets_the_plain_500_page(db):
    client = Client(raise_request_exception=False)
    response = client.get("/boom/")
    assert response.status_code == 500
    assert b"Server error" in response.content
    assert b"an unexpected bug" not in response.content
    assert b"portal/portal.css" in response.content


def test_embedded_mode_hides_the_debug_pages_yet_serves_static_files(tmp_path):
    """bin/run's settings: the 404 page lists no routes, static files and log-in still work."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "STEREORANK_"))},
        "STEREORANK_VAR_DIR": str(tmp_path),
    }
    env.pop("DATABASE_URL", None)
    probe = """
import django
django.setup()
from django.conf import settings
from django.test import Client
client = Client(HTTP_HOST="127.0.0.1")
missing = client.get("/no-such-page/")
print("debug", settings.DEBUG)
page = missing.content
print("404", missing.status_code, b"URLconf" in page, b"Page not found" in page)
print("css", client.get("/static/portal/portal.css").status_code)
login = client.get("/login/")
print("login", login.status_code, login.cookies["csrftoken"]["secure"] == "")
"""
    result = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "web.settings"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines())
    assert lines == {
        "debug": "False",
        "404": "404 False True",
        "css": "200",
        "login": "200 True",
    }


def test_debug_is_opt_in_in_embedded_mode(tmp_path):
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "STEREORANK_"))},
        "STEREORANK_VAR_DIR": str(tmp_path),
        "DJANGO_DEBUG": "true",
        "DJANGO_SETTINGS_MODULE": "web.settings",
    }
    env.pop("DATABASE_URL", None)
    probe = "import django; django.setup(); from django.conf import settings; print(settings.DEBUG)"
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.stdout.strip() == "True", result.stderr


def _links(tree) -> list[str]:
    if isinstance(tree, dict):
        return [url for value in tree.values() for url in _links(value)]
    return [tree]


@pytest.mark.parametrize("who", ["anonymous", "annotator", "staff"])
def test_the_api_root_lists_the_parts_each_user_may_use(annotator, who):
    client = Client() if who == "anonymous" else annotator("ann", staff=who == "staff")
    response = client.get("/api/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    root = response.json()
    assert root["annotator"]["token"].endswith("/api/auth/token/")
    assert ("staff" in root) == (who == "staff")
    assert ("schema" in root) == ("docs" in root) == (who == "staff")  # the API's map: staff
    assert ("training" in root) == (who == "staff")
    if who == "staff":
        assert root["schema"].endswith("/api/schema/") and root["docs"].endswith("/api/docs/")
        assert root["training"]["runs"].endswith("/api/training/runs/")
        assert root["staff"]["rankings"].endswith("/api/staff/rankings/")
    for url in _links(root):
        if "{" in url or url.endswith("/auth/token/"):
            continue  # a template, or a POST-only endpoint
        answer = client.get(urlsplit(url).path)
        expected = (200, 401, 403, 405) if who == "anonymous" else (200, 405)
        assert answer.status_code in expected, (url, answer.status_code)
