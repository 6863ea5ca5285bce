"""Annotation progress dashboard: staff only, real numbers, constant query count."""

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import DemographicField, Occupation, RankingTask
from annotation.participants import services
from annotation.rankings.exports import pseudonym
from tests.staff import give_role
from web.dashboards.progress import demographic_counts

URL = reverse("dashboards:progress")


def test_anonymous_is_sent_to_the_portals_log_in_like_the_checker(client, db):
    response = client.get(URL)
    assert response.status_code == 302
    login = reverse("portal:login")
    assert response["Location"] == f"{login}?next={URL}"
    assert client.get(reverse("scoring:check"))["Location"].startswith(login + "?next=")
    # and the log-in brings a staff member back to the page asked for
    from django.contrib.auth import get_user_model

    get_user_model().objects.create_user("boss", password="pw-123456", is_staff=True)
    back = client.post(login, {"username": "boss", "password": "pw-123456", "next": URL})
    assert back["Location"] == URL


def test_annotator_is_refused(annotator_client):
    assert annotator_client.get(URL).status_code == 403


def test_staff_sees_occupations_annotators_and_demographics(
    staff_client, make_tasks, annotator, rank, settings
):
    settings.STEREORANK = {**settings.STEREORANK, "GROUP_K": 1}
    make_tasks(n=4, k=3, overlap=2)
    DemographicField.objects.create(key="gender", label="Gender", choices=["woman", "man"])
    alice, bob = annotator("alice"), annotator("bob")
    services.save_demographics(alice.profile, {"gender": "woman"})
    rank(alice.profile, 4)
    rank(bob.profile, 1)

    response = staff_client.get(URL)
    assert response.status_code == 200
    nurse = next(r for r in response.context["occupations"] if r["name"] == "nurse")
    # 4 tasks x overlap 2 = 8 slots; 5 rankings stored; one task has both of its rankings.
    assert (nurse["n_tasks"], nurse["slots"], nurse["rankings"]) == (4, 8, 5)
    assert nurse["complete"] == 1 and nurse["percent"] == 62
    rows = {a["username"]: a for a in response.context["annotators"]}
    assert (rows["alice"]["done"], rows["alice"]["quota"]) == (4, alice.profile.quota)
    assert rows["bob"]["done"] == 1
    assert rows["alice"]["pseudonym"] == pseudonym(alice.profile.user_id)
    gender = response.context["demographics"][0]
    assert dict(gender["counts"])["woman"] == 1
    assert gender["unanswered"] == 1  # bob
    html = response.content.decode()
    assert "alice" in html and "nurse" in html and "Gender" in html


def test_counts_per_answer_need_the_demographics_permission(
    client, make_tasks, annotator, rank, settings
):
    """A researcher without the permission, and a viewer, read the progress, not the
    counts of the people's answers."""
    from django.test import Client

    from tests.staff import make_staff

    settings.STEREORANK = {**settings.STEREORANK, "GROUP_K": 1}
    make_tasks(n=2, k=3, overlap=2)
    DemographicField.objects.create(key="gender", label="Gender", choices=["woman", "man"])
    alice = annotator("alice")
    services.save_demographics(alice.profile, {"gender": "woman"})
    rank(alice.profile, 1)
    for name, role in (("res", "researcher"), ("view", "viewer")):
        reader = Client()
        reader.force_login(make_staff(name, role=role, demographics=False))
        response = reader.get(URL)
        assert response.status_code == 200 and response.context["demographics"] is None
        html = response.content.decode()
        assert "woman" not in html and "demographics permission" in html


def test_demographic_counts_orders_choices_then_free_text():
    field = DemographicField(key="age", label="Age", choices=["18-29", "30-49", "50+"])
    answers = [{"age": "30-49"}, {"age": "30-49"}, {"age": "prefer not to say"}, {}, {"x": 1}]
    answers += [{"age": "50+"}]
    [out] = demographic_counts([field], answers, k=1)
    assert out["counts"] == [("30-49", 2), ("50+", 1), ("prefer not to say", 1)]  # no 18-29
    assert out["unanswered"] == 2 and out["hidden"] == ""
    [out] = demographic_counts([field], answers, k=2)
    assert out["counts"] == [("30-49", 2)]
    assert out["hidden"] == "2 groups below k = 2 hidden" and out["unanswered"] == 2
    free = DemographicField(key="lang", label="Language", choices=[])
    [out] = demographic_counts([free], [{"lang": "fr"}, {"lang": "de"}, {"lang": "fr"}], k=1)
    assert out["counts"] == [("fr", 2), ("de", 1)]


def test_query_count_does_not_grow_with_rows(
    staff_client, make_tasks, annotator, rank, django_assert_max_num_queries
):
    def count() -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert staff_client.get(URL).status_code == 200
        return len(ctx.captured_queries)

    make_tasks(n=2, k=3, overlap=1)
    rank(annotator("a0").profile, 1)
    small = count()
    other = Occupation.objects.create(name="pilot", slug="pilot")
    for task in make_tasks(n=10, k=3, overlap=3):
        RankingTask.objects.filter(pk=task.pk).update(occupation=other)
    for i in range(1, 8):
        rank(annotator(f"a{i}").profile, 2)
    assert count() == small
    with django_assert_max_num_queries(small):
        staff_client.get(URL)


def test_the_page_says_which_sampler_each_study_uses(staff_client, db):
    from django.utils import timezone

    from annotation.models import Study
    from annotation.studies.lifecycle import default_study, set_sampler

    study = default_study()  # made when missing (a transactional test before may have flushed it)
    assert "none: uniform order" in staff_client.get(URL).content.decode()
    study = set_sampler(study, Study.Sampler.ACTIVE)
    page = staff_client.get(URL).content.decode()
    assert 'data-study="default"' in page and "being computed" in page
    Study.objects.filter(pk=study.pk).update(
        priorities_basis="v2's head, 40 rankings: 150 open tasks scored (20 by exploration)",
        priorities_updated_at=timezone.now(),
    )
    assert "150 open tasks scored (20 by exploration)" in staff_client.get(URL).content.decode()


def test_the_tables_count_the_chosen_study_alone(
    staff_client, make_tasks, annotator, rank, settings
):
    """Two studies with rankings: the occupations, annotators, statuses and demographics
    of the page are the chosen study's, not both pooled."""
    settings.STEREORANK = {**settings.STEREORANK, "GROUP_K": 1}
    from django.contrib.auth import get_user_model

    from annotation.models import Study
    from annotation.participants import consent
    from annotation.studies import lifecycle as studies

    DemographicField.objects.create(key="gender", label="Gender", choices=["woman", "man"])
    make_tasks(n=4, k=3, overlap=2, occupation="nurse")  # the default study's
    alice, bob = annotator("alice").profile, annotator("bob").profile
    services.save_demographics(alice, {"gender": "woman"})
    rank(alice, 3)
    rank(bob, 1)
    wave = studies.create_study("wave-b", name="Wave B")
    give_role(staff_client.user, wave)
    consent.publish(wave, consent.demonstration_values())
    studies.transition(wave, Study.Status.OPEN)
    make_tasks(n=2, k=3, overlap=1, occupation="pilot", study=wave)
    user = get_user_model().objects.create_user("carol", password="pw-123456")
    carol = services.get_profile(user, study=wave)
    services.give_consent(carol)
    services.save_demographics(carol, {"gender": "man"})
    rank(carol, 2)

    def tables(slug: str) -> dict:
        context = staff_client.get(URL, {"study": slug}).context
        return {
            "occupations": {
                r["name"]: (r["n_tasks"], r["slots"], r["rankings"], r["complete"])
                for r in context["occupations"]
            },
            "totals": context["totals"]["rankings"],
            "annotators": {a["username"]: a["done"] for a in context["annotators"]},
            "gender": dict(context["demographics"][0]["counts"]),
            "unanswered": context["demographics"][0]["unanswered"],
            "n_people": context["n_people"],
            "active": context["statuses"]["active"],
        }

    assert tables("wave-b") == {
        "occupations": {"pilot": (2, 2, 2, 2)},
        "totals": 2,
        "annotators": {"carol": 2},
        "gender": {"man": 1},
        "unanswered": 0,
        "n_people": 1,
        "active": 1,
    }
    assert tables("default") == {
        "occupations": {"nurse": (4, 8, 4, 0)},
        "totals": 4,
        "annotators": {"alice": 3, "bob": 1},
        "gender": {"woman": 1},
        "unanswered": 1,
        "n_people": 2,
        "active": 2,
    }
    html = staff_client.get(URL, {"study": "wave-b"}).content.decode()
    assert "carol" in html and "alice" not in html
