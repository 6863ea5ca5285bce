"""The Quality dashboard: staff only, the report's figures, sortable table, charts, reinstate."""

import pytest
from django.urls import reverse

from annotation.models import AnnotatorStatus, RankingTask, StatusChange
from annotation.quality import standing
from annotation.quality import store as quality_store
from annotation.rankings.exports import pseudonym
from web.dashboards import charts

URL = reverse("dashboards:quality")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def ids(task) -> list[int]:
    return list(task.items.order_by("id").values_list("id", flat=True))


@pytest.fixture
def ranked(make_tasks, annotator, store_ranking, settings):
    """Three annotators on two shared tasks of 4 and one gold task; ``cat`` excluded."""
    settings.STEREORANK = {**settings.STEREORANK, "GOLD_RATE": 0.0, "QUALITY_N_BOOT": 50}
    tasks = make_tasks(2, k=4, overlap=3)
    (gold,) = make_tasks(1, k=4, occupation="chef")
    RankingTask.objects.filter(pk=gold.pk).update(is_gold=True, gold_reference={"order": ids(gold)})
    profiles = {}
    for n, name in enumerate(("ann", "ben", "cat")):
        profile = profiles[name] = annotator(name).profile
        for task in tasks:
            order = ids(task)
            order[0], order[n + 1] = order[n + 1], order[0]
            store_ranking(profile, task, order, shown=order[::-1], seconds=5 + n)
    g = ids(gold)
    store_ranking(profiles["ann"], gold, g, shown=g[::-1])  # score 1
    store_ranking(profiles["ben"], gold, g[::-1], shown=g)  # score -1
    standing._move(profiles["cat"], AnnotatorStatus.EXCLUDED, "test exclusion")
    quality_store.refresh(False, 50)  # what the default queue's worker does
    return profiles


def test_anonymous_go_to_log_in_and_annotators_are_refused(client, annotator_client):
    assert client.get(URL)["Location"].startswith(reverse("portal:login") + "?next=")
    assert annotator_client.get(URL).status_code == 403
    chart = reverse("dashboards:quality-chart")
    assert annotator_client.get(chart).status_code == 403


def test_page_shows_the_reports_figures_and_the_nav_link(staff_client, ranked):
    response = staff_client.get(URL)
    assert response.status_code == 200
    report = response.context["report"]
    html = response.content.decode()
    assert f'href="{URL}?study=default" aria-current="page">Quality</a>' in html
    w = report["agreement"]["overall"]["kendall_w"]
    assert report["agreement"]["overall"]["n_annotators"] == 2  # cat is excluded
    assert f"{w['value']:.3f}" in html
    for profile in ranked.values():
        assert pseudonym(profile.user_id) in html
    assert "test exclusion" in html  # the reason beside the status
    assert 'src="/dashboards/quality/positions-4.svg?study=default"' in html


def test_headings_and_fields_read_as_words_and_a_missing_gold_score_is_explained(
    staff_client, make_tasks, annotator, store_ranking, settings
):
    from annotation.models import DemographicField

    DemographicField.objects.update_or_create(key="age_band", defaults={"label": "Age band"})
    (task,) = make_tasks(1, k=4)
    store_ranking(annotator("ann").profile, task, ids(task))
    quality_store.refresh(False, settings.STEREORANK["QUALITY_N_BOOT"])
    html = staff_client.get(URL).content.decode()
    for heading in ("Gold score", "Check pass rate", "Consensus rho", "Median seconds"):
        assert f">{heading}</a></th>" in html
    assert "Goldscore" not in html and "Untouchedrate" not in html
    assert "<h3>Age band</h3>" in html and "<h3>age_band</h3>" not in html
    assert 'id="no-gold"' in html and "makes the study's gold tasks" in html


def test_no_gold_note_once_there_are_gold_tasks(staff_client, ranked):
    assert 'id="no-gold"' not in staff_client.get(URL).content.decode()


def test_annotator_table_sorts_by_any_column_with_unknowns_last(staff_client, ranked):
    def order(query):
        rows = staff_client.get(URL + query).context["annotators"]
        return [r["pseudonym"] for r in rows]

    ann, ben, cat = (pseudonym(ranked[n].user_id) for n in ("ann", "ben", "cat"))
    assert order("?sort=gold_score") == [ben, ann, cat]  # -1, 1, none
    assert order("?sort=gold_score&dir=desc") == [ann, ben, cat]
    assert order("?sort=median_seconds&dir=desc")[0] == cat
    assert order("?sort=nonsense") == sorted([ann, ben, cat])
    assert order("?sort=pseudonym&dir=desc") == sorted([ann, ben, cat], reverse=True)
    rows = staff_client.get(URL + "?sort=status").context["annotators"]
    keys = [(r["status"], r["pseudonym"]) for r in rows]  # ties in pseudonym order
    assert keys == sorted(keys) and keys[0] == ("excluded", cat)


def test_charts_are_svgs_cached_by_content(staff_client, ranked):
    agreement = staff_client.get(reverse("dashboards:quality-chart"))
    assert agreement.status_code == 200 and agreement["Content-Type"] == "image/svg+xml"
    assert b"<title" in agreement.content
    again = staff_client.get(
        reverse("dashboards:quality-chart"), HTTP_IF_NONE_MATCH=agreement["ETag"]
    )
    assert again.status_code == 304
    heat = staff_client.get(reverse("dashboards:position-chart", args=[4]), {"format": "png"})
    assert heat.status_code == 200 and heat.content.startswith(PNG_MAGIC)
    assert staff_client.get(reverse("dashboards:position-chart", args=[7])).status_code == 404


def test_chart_drawings_show_their_data():
    svg = charts.render(
        charts.estimates_with_intervals(
            [charts.IntervalPoint("nurse", 0.5, 0.3, 0.7), charts.IntervalPoint("CEO", 0.2)], "W"
        ),
        "svg",
    )
    assert b"nurse" in svg and b"CEO" in svg
    svg = charts.render(charts.position_heatmap([[3, 1], [1, 3]], "K = 2"), "svg")
    assert b"K = 2" in svg and b"expected 2.0" in svg
    assert b"Nothing measured" in charts.render(charts.estimates_with_intervals([], "W"), "svg")


def test_staff_reinstate_with_a_reason_and_it_is_recorded(staff_client, ranked):
    cat = ranked["cat"]
    url = reverse("dashboards:reinstate", args=[cat.pk])
    response = staff_client.post(url, {"reason": "  "}, follow=True)
    cat.refresh_from_db()
    assert cat.status == AnnotatorStatus.EXCLUDED
    assert "Reason" in response.content.decode()  # the form's error, on the page
    response = staff_client.post(url, {"reason": "Checked their work by hand."}, follow=True)
    cat.refresh_from_db()
    assert cat.status == AnnotatorStatus.OK
    change = StatusChange.objects.filter(annotator=cat).first()
    assert (change.previous, change.by, change.reason) == (
        "excluded",
        staff_client.user,
        "Checked their work by hand.",
    )
    html = response.content.decode()
    assert "Reinstated" in html and "Checked their work by hand." in html
    # The page was cached before; the new status shows, and reinstating again is refused.
    row = next(r for r in response.context["annotators"] if r["profile"] == cat.pk)
    assert row["status"] == "ok"
    response = staff_client.post(url, {"reason": "again"}, follow=True)
    assert "nothing to reinstate" in response.content.decode()


def test_reinstate_needs_post_and_staff(staff_client, annotator_client, ranked):
    url = reverse("dashboards:reinstate", args=[ranked["cat"].pk])
    assert staff_client.get(url).status_code == 405
    assert annotator_client.post(url, {"reason": "me"}).status_code == 403
    assert staff_client.post(reverse("dashboards:reinstate", args=[10**6])).status_code == 404


def test_a_long_annotator_table_comes_in_pages_keeping_the_sort(staff_client, ranked, monkeypatch):
    monkeypatch.setattr(quality_store, "PAGE_SIZE", 2)
    first = staff_client.get(URL + "?sort=gold_score")
    assert len(first.context["annotators"]) == 2
    html = first.content.decode()
    assert "Annotators 1–2 of 3" in html and "?sort=gold_score&amp;study=default&amp;page=2" in html
    second = staff_client.get(URL + "?sort=gold_score&page=2")
    assert [r["pseudonym"] for r in second.context["annotators"]] == [
        pseudonym(ranked["cat"].user_id)
    ]
