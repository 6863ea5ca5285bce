"""The stored quality report: computed by the default queue's task, served without
computing, marked stale and refreshed (once per data version) when the data changes,
forgotten on erasure."""

import pytest
from django.core.cache import cache

from annotation.models import QualityReport
from annotation.participants.erasure import erase_annotator
from annotation.quality import store as quality_store
from tests.staff import give_role
from web.celery import app


def ids(task) -> list[int]:
    return list(task.items.order_by("id").values_list("id", flat=True))


@pytest.fixture
def ranked(make_tasks, annotator, store_ranking):
    tasks = make_tasks(3, k=4, overlap=3)
    profiles = [annotator(n).profile for n in ("ann", "ben", "cat")]
    for n, profile in enumerate(profiles):
        for task in tasks[:2]:
            order = ids(task)
            order[0], order[n + 1] = order[n + 1], order[0]
            store_ranking(profile, task, order, shown=order[::-1], seconds=5)
    cache.clear()
    return {"tasks": tasks, "profiles": profiles}


def served(n_boot=30):
    return quality_store.served_report(False, n_boot)


def test_routed_to_the_default_queue():
    route = app.amqp.router.route({}, quality_store.REFRESH_TASK)
    assert route["queue"].name == "default"


def test_served_from_the_store_without_computing(
    ranked, monkeypatch, django_assert_max_num_queries
):
    quality_store.refresh(False, 30)
    import annotation.quality.report

    def never(*a, **kw):
        raise AssertionError("computed in the request")

    monkeypatch.setattr(annotation.quality.report, "quality_report", never)
    with django_assert_max_num_queries(8):
        current = served()
    assert current.stale is False and current.report["n_rankings"] == 6
    assert current.computed_at is not None
    # a task delivered twice computes once: the stored report still describes the data
    assert quality_store.refresh(False, 30).computed_at == current.computed_at


def test_queued_once_when_missing_and_computed_by_the_task(
    ranked, django_capture_on_commit_callbacks, monkeypatch
):
    sent = []
    monkeypatch.setattr(
        "celery.canvas.Signature.apply_async", lambda sig, *a, **kw: sent.append(sig.task)
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert served().report is None
    with django_capture_on_commit_callbacks(execute=True):
        served()  # the same data version: not queued again
    assert sent == [quality_store.REFRESH_TASK]
    from annotation.tasks import refresh_quality_report

    refresh_quality_report.apply(args=(False, 30)).get()
    assert served().stale is False


def test_refreshed_when_the_data_changes(ranked, store_ranking, django_capture_on_commit_callbacks):
    quality_store.refresh(False, 30)
    before = served()
    ann = ranked["profiles"][0]
    third = ranked["tasks"][2]
    store_ranking(ann, third, ids(third))
    with django_capture_on_commit_callbacks() as callbacks:
        stale = served()
    assert stale.stale is True and stale.report["n_rankings"] == before.report["n_rankings"]
    assert len(callbacks) == 1  # the refresh, sent once the request commits
    quality_store.refresh(False, 30)
    fresh = served()
    assert fresh.stale is False and fresh.data_version != before.data_version
    assert fresh.report["n_rankings"] == 7


def test_a_changed_setting_makes_it_stale(ranked, settings):
    quality_store.refresh(False, 30)
    settings.STEREORANK = {**settings.STEREORANK, "GROUP_K": 2}
    assert served().stale is True


def test_erasure_forgets_stored_reports(ranked):
    quality_store.refresh(False, 30)
    erase_annotator(ranked["profiles"][0], via="staff")
    assert not QualityReport.objects.exists()


@pytest.fixture
def second_study(ranked, make_tasks, annotator, store_ranking):
    """``wave-b`` beside the default study's ``ranked``: two annotators of its own, each
    ranking its one task in reverse (a ranking order the default study never sees)."""
    from annotation.models import Study

    b = Study.objects.create(slug="wave-b", name="Wave B")
    (task,) = make_tasks(1, k=4, overlap=3, occupation="pilot", study=b)
    profiles = []
    for name in ("dan", "eve"):
        profile = annotator(name).profile
        profile.study = b
        profile.save(update_fields=["study"])
        store_ranking(profile, task, ids(task)[::-1], seconds=5)
        profiles.append(profile)
    cache.clear()
    return {"study": b, "task": task, "profiles": profiles}


def test_each_study_has_its_own_stored_report_and_neither_leaks(
    ranked, second_study, store_ranking, annotator, make_tasks
):
    from annotation.rankings.exports import pseudonym
    from annotation.studies import lifecycle as studies

    b = second_study["study"]
    default = studies.default_study()
    quality_store.refresh(False, 30)
    quality_store.refresh(False, 30, study=b)
    assert QualityReport.objects.count() == 2
    mine, theirs = served().report, quality_store.served_report(False, 30, study=b).report
    assert (mine["study"], mine["n_rankings"]) == ("default", 6)
    assert (theirs["study"], theirs["n_rankings"]) == ("wave-b", 2)
    names = {p: pseudonym(p.user_id) for p in ranked["profiles"] + second_study["profiles"]}
    pages = (("d", served()), ("b", quality_store.served_report(False, 30, study=b)))
    shown = {s: {r["pseudonym"] for r in rep.annotator_page().object_list} for s, rep in pages}
    assert shown["d"] == {names[p] for p in ranked["profiles"]}
    assert shown["b"] == {names[p] for p in second_study["profiles"]}
    # a new ranking in wave-b moves only wave-b's data version: the default's stays fresh
    before = quality_store.data_version(default)
    fay = annotator("fay").profile
    fay.study = b
    fay.save(update_fields=["study"])
    store_ranking(fay, second_study["task"], ids(second_study["task"]), seconds=5)
    assert quality_store.data_version(default) == before
    assert served().stale is False
    assert quality_store.served_report(False, 30, study=b).stale is True


def test_staff_api_and_dashboard_take_a_study(ranked, second_study, annotator):
    from django.test import Client

    quality_store.refresh(False, 30)
    quality_store.refresh(False, 30, study=second_study["study"])
    staff = annotator("boss", staff=True)
    give_role(staff.profile.user, second_study["study"])
    assert staff.get("/api/staff/quality/?n_boot=30").json()["n_rankings"] == 6
    body = staff.get("/api/staff/quality/?n_boot=30&study=wave-b").json()
    assert (body["study"], body["n_rankings"]) == ("wave-b", 2)
    unknown = staff.get("/api/staff/quality/?n_boot=30&study=nope")
    assert unknown.status_code == 404 and unknown.json() == {"detail": "Not found."}
    browser = Client()
    browser.force_login(staff.profile.user)
    with override_n_boot(30):
        page = browser.get("/dashboards/quality/?study=wave-b").content.decode()
        assert "2 rankings of this study" in page and 'value="wave-b" selected' in page
        page = browser.get("/dashboards/quality/").content.decode()  # wave-b remembered
        assert "2 rankings of this study" in page
        page = browser.get("/dashboards/quality/?study=default").content.decode()
        assert "6 rankings of this study" in page
        assert browser.get("/dashboards/quality/?study=nope").status_code == 404


def override_n_boot(n_boot):
    from django.conf import settings
    from django.test import override_settings

    return override_settings(STEREORANK={**settings.STEREORANK, "QUALITY_N_BOOT": n_boot})


def test_stale_when_statuses_consents_gold_or_check_tasks_change(ranked):
    from django.utils import timezone

    from annotation.models import AnnotatorStatus, RankingTask
    from annotation.quality import standing

    ann, ben, _ = ranked["profiles"]
    ranked_task, fresh_task = ranked["tasks"][1], ranked["tasks"][2]
    changes = {
        "status": lambda: standing._move(ann, AnnotatorStatus.WARNED, "test"),
        "consent": lambda: ben.consents.active().update(withdrawn_at=timezone.now()),
        "gold": lambda: RankingTask.objects.filter(pk=fresh_task.pk).update(
            is_gold=True, gold_reference={"order": ids(fresh_task)}
        ),
        "check": lambda: RankingTask.objects.filter(pk=ranked_task.pk).update(
            check_item=ids(ranked_task)[0], check_position=0
        ),
    }
    quality_store.refresh(False, 30)
    for name, change in changes.items():
        change()
        assert served().stale is True, name
        quality_store.refresh(False, 30)
        assert served().stale is False, name


def test_the_annotator_table_is_read_a_sorted_page_at_a_time(ranked, monkeypatch, annotator):
    from annotation.rankings.exports import pseudonym

    quality_store.refresh(False, 30)
    names = sorted(pseudonym(p.user_id) for p in ranked["profiles"])
    monkeypatch.setattr(quality_store, "PAGE_SIZE", 2)
    page = served().annotator_page(2)
    assert [r["pseudonym"] for r in page.object_list] == names[2:]
    backwards = served().annotator_page(1, "pseudonym", descending=True)
    assert [r["pseudonym"] for r in backwards] == names[::-1][:2]
    staff = annotator("boss", staff=True)
    body = staff.get("/api/staff/quality/?n_boot=30&page=2").json()
    assert [r["pseudonym"] for r in body["annotators"]] == names[2:]
    paging = [body[f"annotators_{k}"] for k in ("page", "pages", "count")]
    assert paging == [2, 2, 3]
    assert staff.get("/api/staff/quality/?n_boot=30&page=0").status_code == 400
