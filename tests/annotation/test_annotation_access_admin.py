"""Who may see what in the admin (issue 30): a study's members edited by its owners only
(its last owner kept), the access log read-only for owners of its study, a study added by
a staff member owned by them, a viewer's admin (the study, none of its rows). Each door
tried as the member who must be refused."""

import pytest
from django.test import Client
from django.urls import reverse

from annotation.access import log
from annotation.access.models import AccessLogEntry, StudyMembership
from annotation.models import Study
from tests.staff import make_staff

pytestmark = pytest.mark.django_db


def _browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def alpha():
    return Study.objects.create(slug="alpha", name="Alpha", platform="generic")


def test_owners_grant_and_revoke_in_the_admin_and_keep_an_owner(alpha):
    owner = _browser(make_staff("own", alpha))
    researcher = _browser(make_staff("res", alpha, role="researcher"))
    make_staff("newbie", Study.objects.create(slug="other", name="Other"), role="viewer")
    add = reverse("admin:access_studymembership_add")
    assert researcher.get(add).status_code == 403
    form = {"study": alpha.pk, "username": "newbie", "role": "viewer", "demographics": ""}
    refused = owner.post(add, {**form, "demographics": "on"})
    assert refused.status_code == 200 and "aggregate reports only" in refused.content.decode()
    assert owner.post(add, form).status_code == 302
    made = StudyMembership.objects.get(user__username="newbie", study=alpha)
    assert (made.role, made.granted_by.username) == ("viewer", "own")
    mine = StudyMembership.objects.get(user__username="own")
    change = reverse("admin:access_studymembership_change", args=[mine.pk])
    demoted = owner.post(change, {"role": "researcher", "demographics": ""})
    assert demoted.status_code == 200 and "last owner" in demoted.content.decode()
    delete = reverse("admin:access_studymembership_delete", args=[mine.pk])
    assert owner.post(delete, {"post": "yes"}).status_code == 403
    assert researcher.get(change).status_code == 404  # not an owner: no such page
    assert (
        owner.post(
            reverse("admin:access_studymembership_delete", args=[made.pk]), {"post": "yes"}
        ).status_code
        == 302
    )
    assert not StudyMembership.objects.filter(pk=made.pk).exists()
    assert StudyMembership.objects.get(pk=mine.pk).role == "owner"


def test_the_access_log_in_the_admin_is_read_only_and_the_owners(alpha):
    owner_user = make_staff("own", alpha)
    owner, researcher = _browser(owner_user), _browser(make_staff("res", alpha, role="researcher"))
    other = Study.objects.create(slug="other", name="Other")
    mine = log.record(owner_user, alpha, log.Surface.API, log.Action.EXPORT, "alpha export")
    log.record(owner_user, other, log.Surface.API, log.Action.EXPORT, "other export")
    listed = owner.get(reverse("admin:access_accesslogentry_changelist")).content.decode()
    assert "alpha export" in listed and "other export" not in listed
    assert researcher.get(reverse("admin:access_accesslogentry_changelist")).status_code == 403
    change = reverse("admin:access_accesslogentry_change", args=[mine.pk])
    assert owner.post(change, {"what": "nothing"}).status_code == 403
    delete = reverse("admin:access_accesslogentry_delete", args=[mine.pk])
    assert owner.post(delete, {"post": "yes"}).status_code == 403
    assert owner.get(reverse("admin:access_accesslogentry_add")).status_code == 403
    bulk = owner.post(
        reverse("admin:access_accesslogentry_changelist"),
        {"action": "delete_selected", "_selected_action": [mine.pk], "post": "yes"},
    )
    assert bulk.status_code in (200, 302)
    assert AccessLogEntry.objects.get(pk=mine.pk).what == "alpha export"


def test_a_study_added_in_the_admin_is_its_makers_and_a_viewer_sees_no_rows(alpha):
    lab = make_staff("lab", alpha, role="viewer")
    browser = _browser(lab)
    form = {
        "slug": "wave-9",
        "name": "Wave 9",
        "kind": "collection",
        "platform": "generic",
        "sampler": "uniform",
        "question_format": "rank",
        "gold_per_occupation": 1,
        "checks_per_occupation": 1,
        "quality_off_reason": "",
        "minimum_rankings": 1,
    }
    for name in ("item", "ranking", "annotatorprofile"):  # a viewer of alpha: none of its rows
        assert browser.get(reverse(f"admin:annotation_{name}_changelist")).status_code == 403
    made = browser.post(reverse("admin:annotation_study_add"), form)
    assert made.status_code == 302, made.content.decode()[:2000]
    (membership,) = StudyMembership.objects.filter(study__slug="wave-9")
    assert (membership.user, membership.role) == (lab, "owner")
    studies = browser.get(reverse("admin:annotation_study_changelist")).content.decode()
    assert "Alpha" in studies and "Wave 9" in studies
    for name in ("item", "ranking", "annotatorprofile"):  # now an owner of wave-9: its rows
        assert browser.get(reverse(f"admin:annotation_{name}_changelist")).status_code == 200
    alpha_page = reverse("admin:annotation_study_change", args=[alpha.pk])
    assert browser.get(alpha_page).status_code == 200  # its settings: a viewer reads them
    assert browser.post(alpha_page, {**form, "slug": "alpha"}).status_code == 403
