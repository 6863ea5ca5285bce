"""Who may see what (issue 30): the roles, the permission backend, the one queryset,
grant and revoke (command and service), the access log and its command, and the log's
append-only rule tried the ways an attacker (or a careless script) would."""

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, transaction

from annotation.access import log, roles, scope, services
from annotation.access.models import AccessLogEntry, AppendOnly, StudyMembership
from annotation.errors import InvalidMembership, NotVisible, RoleRefused
from annotation.models import Study, default_study
from tests.staff import make_staff

pytestmark = pytest.mark.django_db

R = roles


def test_the_roles_table():
    owner = {R.VIEW_REPORTS, R.VIEW_DATA, R.RUN_STUDY, R.MANAGE_STUDY}
    assert {c for c in R.CAPABILITIES if R.allows(R.OWNER, False, c)} == owner
    assert {c for c in R.CAPABILITIES if R.allows(R.RESEARCHER, False, c)} == owner - {
        R.MANAGE_STUDY
    }
    assert {c for c in R.CAPABILITIES if R.allows(R.VIEWER, True, c)} == {R.VIEW_REPORTS}
    # the demographics permission is the membership's flag, on a role that reads rows
    assert R.allows(R.RESEARCHER, True, R.VIEW_DEMOGRAPHICS)
    assert not R.allows(R.OWNER, False, R.VIEW_DEMOGRAPHICS)
    assert R.roles_with(R.VIEW_DEMOGRAPHICS) == [R.OWNER, R.RESEARCHER]
    with pytest.raises(ValueError):
        R.allows(R.OWNER, True, "annotation.view_everything")  # a typo is loud


@pytest.fixture
def two_studies():
    a = Study.objects.create(slug="alpha", name="Alpha", platform="generic")
    b = Study.objects.create(slug="bravo", name="Bravo", platform="generic")
    return a, b


def test_has_perm_answers_per_study(two_studies):
    a, b = two_studies
    researcher = make_staff("res", a, role="researcher", demographics=False)
    viewer = make_staff("view", a, role="viewer")
    assert researcher.has_perm(R.VIEW_DATA, a) and researcher.has_perm(R.RUN_STUDY, a)
    assert not researcher.has_perm(R.MANAGE_STUDY, a)
    assert not researcher.has_perm(R.VIEW_DEMOGRAPHICS, a)
    assert not researcher.has_perm(R.VIEW_REPORTS, b)  # another study: nothing
    assert not researcher.has_perm(R.VIEW_DATA)  # never globally
    assert viewer.has_perm(R.VIEW_REPORTS, a) and not viewer.has_perm(R.VIEW_DATA, a)
    # a row of the study answers as its study does
    assert researcher.has_perm(R.VIEW_DATA, StudyMembership.objects.filter(study=a).first())
    researcher.is_staff = False  # no longer staff: the role counts for nothing
    assert not researcher.has_perm(R.VIEW_REPORTS, a)
    root = get_user_model().objects.create_superuser("root", password="pw-123456")
    assert root.has_perm(R.VIEW_DEMOGRAPHICS, b)  # the installation's account


def test_visible_studies_is_one_filtered_queryset(two_studies, django_assert_num_queries):
    a, b = two_studies
    owner = make_staff("own", a, b, role="owner", demographics=False)
    StudyMembership.objects.filter(user=owner, study=b).update(role="viewer")
    assert list(scope.visible_studies(owner, R.VIEW_REPORTS).order_by("slug")) == [a, b]
    assert list(scope.visible_studies(owner, R.VIEW_DATA)) == [a]
    assert list(scope.visible_studies(owner, R.VIEW_DEMOGRAPHICS)) == []
    with django_assert_num_queries(1):  # the memberships as a subquery, not a list
        list(scope.visible_studies(owner, R.VIEW_DATA))
    stranger = make_staff("stranger", b, role="viewer")
    assert list(scope.visible_studies(stranger, R.VIEW_DATA)) == []


def test_study_for_is_a_404_outside_the_roles_and_a_403_inside(two_studies):
    a, b = two_studies
    viewer = make_staff("view", a, role="viewer")
    assert scope.study_for(viewer, "alpha") == a
    with pytest.raises(RoleRefused):
        scope.study_for(viewer, "alpha", R.VIEW_DATA)
    with pytest.raises(NotVisible) as other:
        scope.study_for(viewer, "bravo")
    with pytest.raises(NotVisible) as missing:
        scope.study_for(viewer, "no-such-study")
    assert other.value.message == missing.value.message == "Not found."  # no oracle


def _grant(*argv):
    out = io.StringIO()
    call_command("grant", *argv, stdout=out)
    return out.getvalue().strip()


def test_grant_and_revoke_commands(two_studies):
    a, _ = two_studies
    get_user_model().objects.create_user("ada", is_staff=True)
    said = _grant("ada", "alpha", "--role", "researcher", "--demographics")
    assert said == "ada is now researcher of alpha with the demographics permission"
    ada = get_user_model().objects.get(username="ada")
    assert ada.has_perm(R.VIEW_DEMOGRAPHICS, a) and not ada.has_perm(R.MANAGE_STUDY, a)
    _grant("ada", "alpha", "--role", "owner")  # a new role replaces the old
    (membership,) = StudyMembership.objects.filter(user=ada)
    assert (membership.role, membership.demographics) == ("owner", False)
    out = io.StringIO()
    get_user_model().objects.create_user("bob", is_staff=True)
    _grant("bob", "alpha", "--role", "viewer")
    call_command("revoke", "bob", "alpha", stdout=out)
    assert out.getvalue().strip() == "bob is no longer viewer of alpha"
    assert not StudyMembership.objects.filter(user__username="bob").exists()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["nobody", "alpha", "--role", "viewer"], "There is no account 'nobody'."),
        (["ada", "no-such", "--role", "viewer"], "There is no study 'no-such'."),
        (["ada", "alpha", "--role", "viewer", "--demographics"], "needs the owner or researcher"),
        (["participant", "alpha", "--role", "viewer"], "participant is not a staff account"),
    ],
)
def test_a_grant_that_cannot_be_made_exits_with_one_line(two_studies, argv, message):
    get_user_model().objects.create_user("ada", is_staff=True)
    get_user_model().objects.create_user("participant")
    with pytest.raises(CommandError) as refused:
        call_command("grant", *argv, stdout=io.StringIO())
    assert message in str(refused.value) and "\n" not in str(refused.value)
    assert not StudyMembership.objects.exists()  # nothing half written


def test_a_study_keeps_its_last_owner(two_studies):
    a, _ = two_studies
    make_staff("own", a, role="owner")
    with pytest.raises(InvalidMembership, match="last owner"):
        services.revoke(a, "own")
    with pytest.raises(InvalidMembership, match="last owner"):
        services.grant(a, "own", "viewer")
    make_staff("second", a, role="owner")
    services.revoke(a, "own")  # another owner stays
    assert list(StudyMembership.objects.values_list("user__username", flat=True)) == ["second"]


def test_create_annotator_staff_is_not_a_superuser():
    call_command("create_annotator", "lab", "--password", "pw-1", "--staff", stdout=io.StringIO())
    lab = get_user_model().objects.get(username="lab")
    assert lab.is_staff and not lab.is_superuser
    assert list(scope.visible_studies(lab, R.VIEW_REPORTS)) == []  # no study until granted
    _grant("lab", "default", "--role", "owner")
    assert list(scope.visible_studies(lab, R.VIEW_REPORTS)) == [default_study()]


def test_access_log_command_prints_the_studys_entries_newest_first(two_studies):
    a, b = two_studies
    owner = make_staff("own", a, b)
    log.record(owner, a, log.Surface.API, log.Action.EXPORT, "rankings export (csv)")
    log.record(None, a, log.Surface.COMMAND, log.Action.EXPORT, "export_pairs")
    log.record(owner, b, log.Surface.ADMIN, log.Action.READ, "annotator 3")
    out = io.StringIO()
    call_command("access_log", "alpha", stdout=out)
    lines = [line.split("\t") for line in out.getvalue().splitlines()]
    assert [line[2:] for line in lines] == [
        ["export", "command", "export_pairs"],
        ["export", "api", "rankings export (csv)"],
    ]
    assert lines[0][1].endswith("(command line)") and lines[1][1] == "own"
    with pytest.raises(CommandError, match="There is no study 'nope'."):
        call_command("access_log", "nope", stdout=io.StringIO())


def test_the_access_log_is_append_only(two_studies):
    a, _ = two_studies
    entry = log.record(make_staff("own", a), a, log.Surface.API, log.Action.READ, "rankings")
    entry.what = "nothing to see"
    with pytest.raises(AppendOnly):
        entry.save()
    with pytest.raises(AppendOnly):
        entry.delete()
    with pytest.raises(AppendOnly):
        AccessLogEntry.objects.filter(pk=entry.pk).update(what="nothing")
    with pytest.raises(AppendOnly):
        AccessLogEntry.objects.all().delete()
    a.delete()  # the study goes; its log stays, with its name
    assert AccessLogEntry.objects.get(pk=entry.pk).study_slug == "alpha"


@pytest.mark.postgres
def test_the_database_refuses_to_change_the_access_log(two_studies):
    a, _ = two_studies
    entry = log.record(make_staff("own", a), a, log.Surface.API, log.Action.READ, "rankings")
    table = AccessLogEntry._meta.db_table
    for sql in (f"UPDATE {table} SET what = 'x'", f"DELETE FROM {table}"):
        with (
            pytest.raises(Exception, match="append-only"),
            transaction.atomic(),
            connection.cursor() as cursor,
        ):
            cursor.execute(sql)
    assert AccessLogEntry.objects.get(pk=entry.pk).what == "rankings"
