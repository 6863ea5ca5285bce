"""Ids are ASCII digits (issue 43): no URL pattern takes ``\\d`` (any script's digits),
and an id written in other digits finds nothing."""

import re

import pytest
from url_walk import patterns

from core.ids import ID_PATTERN

# ``\d`` as a regex reads it: not an escaped backslash followed by a "d".
_ANY_DIGIT = re.compile(r"(?<!\\)(?:\\\\)*\\d")


def test_no_url_pattern_takes_digits_of_other_scripts():
    found = [regex for regex, _ in patterns() if _ANY_DIGIT.search(regex)]
    assert found == []
    assert re.fullmatch(ID_PATTERN, "١") is None and re.fullmatch(ID_PATTERN, "12")


def test_the_check_would_see_a_digit_class():
    assert _ANY_DIGIT.search(r"^rankings/(?P<pk>\d+)/$")
    assert not _ANY_DIGIT.search(r"^rankings/(?P<pk>[0-9]+)/\\d$")


# Arabic-Indic, Persian, NKo, Devanagari and full-width digits.
@pytest.mark.parametrize("zero", [0x660, 0x6F0, 0x7C0, 0x966, 0xFF10])
def test_an_id_in_other_digits_is_a_404(admin_client, store_ranking, annotator, make_tasks, zero):
    """The ranking's own id, written in another script's digits (which ``\\d`` and
    ``int`` both read): nothing there."""
    (task,) = make_tasks(1, 3)
    profile = annotator("ranker").profile
    ranking = store_ranking(profile, task, list(task.task_items.values_list("item_id", flat=True)))
    other = "".join(chr(zero + int(d)) for d in str(ranking.pk))
    assert int(other) == ranking.pk and re.fullmatch(r"\d+", other)
    assert admin_client.get(f"/api/staff/rankings/{ranking.pk}/").status_code == 200
    assert admin_client.get(f"/api/staff/rankings/{other}/").status_code == 404


def test_other_digits_open_nothing_at_any_door(admin_client, store_ranking, annotator, make_tasks):
    """The review's finds: the admin read ``١`` as 1 in its paths and its filters, and the
    runs feed overflowed on a 20-digit id (a 500)."""
    (task,) = make_tasks(1, 3)
    ranking = store_ranking(
        annotator("ranker").profile, task, list(task.task_items.values_list("item_id", flat=True))
    )
    other = "".join(chr(0x660 + int(d)) for d in str(ranking.pk))
    change = "/admin/annotation/ranking/{}/change/"
    assert admin_client.get(change.format(ranking.pk)).status_code == 200
    assert admin_client.get(change.format(other)).status_code == 404
    listing = "/admin/annotation/ranking/"
    assert admin_client.get(listing, {"id__exact": other}).status_code == 400
    for ids in (other, "99999999999999999999", "1,x"):
        assert admin_client.get("/dashboards/runs/progress.json", {"ids": ids}).status_code == 400
    assert admin_client.get("/dashboards/runs/progress.json", {"ids": "1,2"}).status_code == 200
