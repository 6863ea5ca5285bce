"""The dashboards remember the study chosen: ``?study=`` on any page, kept in the session
and in every dashboard link, until another is chosen; the runs page snapshots it."""

import re

import pytest
from django.urls import reverse

from annotation.models import Study
from annotation.studies import lifecycle as studies
from tests.staff import give_role
from web.dashboards.base import STUDY_KEY


@pytest.fixture
def wave(db, staff_client) -> Study:
    """A second study; the staff member owns it too (tests/staff.py)."""
    studies.default_study()
    made = Study.objects.create(slug="wave-2", name="Second wave", platform="generic")
    give_role(staff_client.user, made)
    return made


def nav_links(html: str) -> list[str]:
    """The dashboards' own links of the page's navigation and brand."""
    header = html.split('<header class="site-header">')[1].split("</header>")[0]
    return re.findall(r'href="(/dashboards/[^"]*)"', header)


def test_a_study_chosen_on_one_page_is_the_one_the_next_page_shows(staff_client, wave):
    progress = staff_client.get(reverse("dashboards:progress"), {"study": "wave-2"})
    assert progress.context["chosen_study"] == wave
    html = progress.content.decode()
    assert '<option value="wave-2" selected>' in html
    assert '<tr data-study="wave-2" class="chosen" aria-current="true">' in html
    links = nav_links(html)
    assert len(links) == 9 and all(link.endswith("?study=wave-2") for link in links), links
    # follow the navigation to the quality page: the second wave's
    quality = next(link for link in links if link.startswith(reverse("dashboards:quality")))
    page = staff_client.get(quality)
    assert page.context["study"] == wave and page.context["chosen_study"] == wave
    # a page reached without the query string (a bookmark, a redirect) remembers it
    runs = staff_client.get(reverse("dashboards:runs"))
    assert runs.context["chosen_study"] == wave
    assert "Take a snapshot of Second wave" in runs.content.decode()
    assert all(link.endswith("?study=wave-2") for link in nav_links(runs.content.decode()))
    assert staff_client.session[STUDY_KEY] == "wave-2"
    # choosing another study moves every page to it
    staff_client.get(reverse("dashboards:registry"), {"study": "default"})
    assert staff_client.get(reverse("dashboards:quality")).context["study"].slug == "default"


def test_the_snapshot_form_snapshots_the_chosen_study(staff_client, wave):
    staff_client.get(reverse("dashboards:progress"), {"study": "wave-2"})
    response = staff_client.post(reverse("dashboards:snapshot-create"), follow=True)
    messages = [str(m) for m in response.context["messages"]]
    assert messages == [
        'No rankings of Second wave to snapshot (tick "include synthetic annotators" to count '
        "theirs)."
    ]


def test_a_validation_study_is_chosen_but_never_offered_a_snapshot(staff_client, wave):
    val = Study.objects.create(slug="val", name="Validation", platform="generic", kind="validation")
    give_role(staff_client.user, val)
    html = staff_client.get(reverse("dashboards:runs"), {"study": "val"}).content.decode()
    assert 'id="no-snapshot"' in html and "snapshots/new" not in html


def test_the_chooser_keeps_the_pages_other_parameters(staff_client, wave):
    html = staff_client.get(reverse("dashboards:compare"), {"a": 1, "b": 2}).content.decode()
    chooser = html.split('id="study-form"')[1].split("</form>")[0]
    assert '<input type="hidden" name="a" value="1">' in chooser
    assert '<input type="hidden" name="b" value="2">' in chooser


def test_an_unknown_study_is_a_404_and_a_vanished_one_falls_back_to_the_default(staff_client, wave):
    staff_client.get(reverse("dashboards:progress"), {"study": "wave-2"})
    assert staff_client.get(reverse("dashboards:runs"), {"study": "nope"}).status_code == 404
    assert staff_client.session[STUDY_KEY] == "wave-2"  # the choice stands
    wave.delete()
    page = staff_client.get(reverse("dashboards:progress"))
    assert page.context["chosen_study"].slug == "default"
    assert STUDY_KEY not in staff_client.session
