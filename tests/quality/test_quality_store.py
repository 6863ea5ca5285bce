"""The stored quality report: computed by the default queue's task, served without
computing, marked stale and refreshed (once per data version) when the data changes,
forgotten on erasure."""

import pytest
from django.core.cache import cache

from annotation import quality_store
from annotation.erasure import erase_annotator
from annotation.models import QualityReport
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
    import annotation.quality_report

    def never(*a, **kw):
        raise AssertionError("computed in the request")

    monkeypatch.setattr(annotation.quality_report, "quality_report", never)
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
