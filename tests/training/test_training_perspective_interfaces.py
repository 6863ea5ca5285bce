"""Perspective reports through the command, the staff API and the CSV/JSON export."""

import csv
import io
import json

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient
from training_study import make_perspective_study, register_head

from tests.queued import queued
from training.api.views import FieldReportSerializer, GroupFiguresSerializer
from training.models import PerspectiveReport, PerspectiveSummary
from training.perspectives import services as perspectives
from training.snapshots.services import create_snapshot

pytestmark = [pytest.mark.slow]


@pytest.fixture
def version(db, tmp_path, settings):
    """v1, a seeded head on a snapshot with one group of k or more (18-24), one under (25-34)."""
    settings.STEREORANK = {**settings.STEREORANK, "GROUP_K": 5}
    make_perspective_study(tmp_path)
    checkpoint, _ = register_head(create_snapshot(include_synthetic=True), seed=3)
    return checkpoint


@pytest.fixture
def staff_client(staff):
    client = APIClient()
    client.force_authenticate(staff)
    return client


def test_the_command_computes_what_is_missing_and_prints_it(version):
    out = io.StringIO()
    call_command("perspectives", "1", "--field", "age_band", "--json", stdout=out)
    data = json.loads(out.getvalue())
    assert PerspectiveSummary.objects.filter(checkpoint=version).count() == 1
    (field,) = data["fields"]
    assert (data["version"], field["field"], field["k"]) == (1, "age_band", 5)
    assert [g["group"] for g in field["groups"]] == ["18-24"]
    assert field["hidden_groups"] == 1 and "25-34" not in out.getvalue()
    assert "per_prompt" not in field["groups"][0]
    stored = PerspectiveReport.objects.get(checkpoint=version, group="18-24")
    assert field["groups"][0]["alignment"] == stored.alignment
    text = io.StringIO()
    call_command("perspectives", "1", "--field", "age_band", stdout=text)
    lines = text.getvalue()
    assert f"{stored.alignment:.3f} [" in lines
    assert "1 group below k = 5 hidden" in lines and "25-34" not in lines
    table = io.StringIO()
    call_command("perspectives", "1", "--field", "age_band", "--csv", stdout=table)
    rows = list(csv.DictReader(io.StringIO(table.getvalue())))
    assert [(r["group"], r["status"]) for r in rows] == [("18-24", "computed"), ("", "hidden")]
    assert "25-34" not in table.getvalue()
    low, high = stored.figures["alignment_ci"]
    assert float(rows[0]["alignment_low"]) == pytest.approx(low)
    assert float(rows[0]["alignment_high"]) == pytest.approx(high)
    assert int(rows[0]["n_annotators"]) == stored.figures["n_annotators"]
    # under k: how many groups were hidden, no name, every figure and count empty
    assert {k for k, v in rows[1].items() if v} == {
        "version",
        "snapshot",
        "field",
        "status",
        "hidden_groups",
        "k",
    }
    assert rows[1]["hidden_groups"] == "1"


def test_the_command_refuses_with_one_line(version):
    with pytest.raises(CommandError, match="there is no version 9"):
        call_command("perspectives", "9")
    with pytest.raises(CommandError, match="no demographic field 'shoe'"):
        call_command("perspectives", "1", "--field", "shoe")


def test_the_api_queues_what_is_missing_then_answers_from_the_stored_rows(
    version, staff_client, django_capture_on_commit_callbacks
):
    url = "/api/training/checkpoints/1/perspectives/"
    with django_capture_on_commit_callbacks() as callbacks:
        r = staff_client.get(url, {"field": "age_band"})
    assert r.status_code == 202 and r.json()["pending"] == ["age_band"], r.content
    snapshot = version.snapshot
    assert queued(callbacks) == [
        ("training.tasks.perspective_report", (version.pk, snapshot.pk, ["age_band"]))
    ]
    assert not PerspectiveSummary.objects.exists()  # never computed inside a request
    perspectives.compute_reports(version, fields=["age_band"], n_boot=100)
    r = staff_client.get(url, {"field": "age_band"})
    assert r.status_code == 200
    (field,) = r.json()["fields"]
    # what the schema documents is what is sent
    assert set(field) == set(FieldReportSerializer().fields)
    assert set(field["groups"][0]) == set(GroupFiguresSerializer().fields)
    assert field["hidden_groups"] == 1 and "25-34" not in r.content.decode()
    r = staff_client.get(url, {"field": "age_band", "format": "csv"})
    assert r.status_code == 200 and r["Content-Type"] == "text/csv"
    rows = list(csv.DictReader(io.StringIO(r.content.decode())))
    assert [r["group"] for r in rows] == ["18-24", ""]
    newer = create_snapshot(include_synthetic=True, seed=4)
    with django_capture_on_commit_callbacks() as callbacks:
        r = staff_client.get(url, {"field": "age_band", "snapshot": newer.pk})
    assert r.status_code == 202 and r.json()["snapshot"] == newer.pk
    assert queued(callbacks) == [
        ("training.tasks.perspective_report", (version.pk, newer.pk, ["age_band"]))
    ]


def test_the_api_refuses_clearly(version, staff_client, annotator):
    url = "/api/training/checkpoints/{}/perspectives/"
    assert annotator("alice").get(url.format(1)).status_code == 403
    r = staff_client.get(url.format(9))
    assert r.status_code == 404 and r.json() == {"detail": "Not found."}  # nothing said of it
    r = staff_client.get(url.format(1), {"field": "shoe"})
    assert r.status_code == 404 and "no demographic field 'shoe'" in r.json()["detail"]
    r = staff_client.get(url.format(1), {"format": "xml"})
    assert r.status_code == 400 and "format" in r.json()
    version.snapshot = None
    version.save(update_fields=["snapshot"])
    r = staff_client.get(url.format(1))
    assert r.status_code == 400 and "has no snapshot of its own" in r.json()["detail"]
