"""No dead ends on the staff side (issue 37): signed in as an owner, a researcher, a
viewer and a staff member with no role, the crawl follows every link of every staff
page outside the admin (the test client: statuses and words). A page a link leads to is
a page in the site's style: a refusal (403, 404, 405) says why and what to do next, never
Django's bare page; a staff member with no role is told to ask for one, naming no study
or owner; no page answers a 500. Widths at laptop and phone size are the browser tests'
(tests/browser/test_browser_staff_pages.py)."""

import re
from urllib.parse import urljoin, urlsplit

import pytest
from django.test import Client
from django.utils.html import escape
from staff import make_staff

from annotation.models import default_study
from web.dashboards.base import NO_ROLE

START = "/dashboards/"
LINK = re.compile(r'href="([^"#]+)"')
SKIP = ("/admin/", "/static/", "/media/", "/logout", "/api/")
BARE = ("<h1>Forbidden", "<h1>Not Found", "403 Forbidden", "405 Method Not Allowed")


def crawl(client: Client, limit: int = 150) -> dict[str, tuple[int, str]]:
    """Every staff page reachable from the dashboards by a link: path -> (status, HTML)."""
    seen: dict[str, tuple[int, str]] = {}
    queue = [START]
    while queue and len(seen) < limit:
        path = queue.pop(0)
        if path in seen:
            continue
        response = client.get(path)
        kind = response.get("Content-Type", "")
        body = response.content.decode(errors="replace") if "html" in kind else ""
        seen[path] = (response.status_code, body)
        if response.status_code in (301, 302):
            queue.append(urljoin(path, response["Location"]))
        for href in LINK.findall(body):
            target = urljoin(path, href.replace("&amp;", "&"))
            parts = urlsplit(target)
            if parts.netloc or not parts.path.startswith(("/dashboards/", "/check/")):
                continue
            if not any(part in parts.path for part in SKIP):
                queue.append(target)
    return seen


@pytest.fixture
def kinds(db, make_tasks):
    make_tasks(3, 3)
    study = default_study()
    return {
        "owner": make_staff("owner-a", study, role="owner"),
        "researcher": make_staff("researcher-a", study, role="researcher"),
        "viewer": make_staff("viewer-a", study, role="viewer"),
        "no role": make_staff("nobody-a", study, role="viewer"),
    }


def test_every_staff_link_leads_to_a_page_that_says_something(kinds):
    from annotation.access.models import StudyMembership

    StudyMembership.objects.filter(user=kinds["no role"]).delete()
    reached = {}
    for kind, user in kinds.items():
        client = Client(raise_request_exception=False)
        client.force_login(user)
        pages = crawl(client)
        reached[kind] = len(pages)
        for path, (status, body) in pages.items():
            where = f"{kind}: {path} ({status})"
            assert status < 500, where
            if status in (301, 302):
                continue
            if not body:  # a chart, a JSON progress feed: not a page
                assert status == 200, where
                continue
            assert not any(bare in body for bare in BARE), where
            assert re.search(r"<h1[^>]*>\s*\S", body), f"{where}: a page without a heading"
            if status >= 400:
                assert "To the dashboards" in body, f"{where}: no next step"
    assert reached["owner"] >= 8 and reached["viewer"] >= 8, reached
    # The staff member with no role: told so on every dashboard, no study or owner named.
    client = Client()
    client.force_login(kinds["no role"])
    page = client.get(START)
    assert page.status_code == 403 and escape(NO_ROLE) in page.content.decode()
    assert "default" not in page.content.decode().split("<main", 1)[-1].lower()
    assert "owner-a" not in page.content.decode()


def test_a_get_of_a_post_only_address_is_a_page(kinds):
    client = Client()
    client.force_login(kinds["owner"])
    page = client.get("/dashboards/registry/1/promote")
    assert page.status_code == 405 and page["Allow"] == "POST"
    assert "does not take a GET request (it takes POST)" in page.content.decode()


def test_schedules_offer_their_edit_links_only_to_who_may_edit_them(kinds, admin_client):
    client = Client()
    client.force_login(kinds["owner"])
    page = client.get("/dashboards/schedules/").content.decode()
    assert "periodictask/add" not in page and "administrator (a superuser)" in page
    assert "periodictask/add" in admin_client.get("/dashboards/schedules/").content.decode()


def test_the_compare_page_says_what_is_missing_without_two_versions(kinds):
    client = Client()
    client.force_login(kinds["owner"])
    page = client.get("/dashboards/compare/").content.decode()
    assert "No version of yours to compare yet: a comparison needs two." in page
    assert 'id="compare-form"' not in page  # no empty drop-downs
