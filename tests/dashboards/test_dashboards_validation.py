"""The validation report's page, plot and staff API (issue 17): the same figures as the
command, each with its 95% interval, the power analysis, staff only."""

import io
import json

import pytest
from django.core.management import call_command
from django.utils.html import escape
from rest_framework.test import APIClient

from annotation.accounts import tokens
from tests.staff import give_role
from tests.validation_helpers import make_validation_study


@pytest.fixture
def ranked(db, media_root, tmp_path, settings, staff_client):
    settings.STEREORANK = {**settings.STEREORANK, "QUALITY_N_BOOT": 100}
    study = make_validation_study(tmp_path)
    give_role(staff_client.user, study)  # the staff member owns it (tests/staff.py)
    call_command(
        "simulate_annotators",
        "--study",
        "val",
        "--count",
        "8",
        "--effect",
        "1.0",
        stdout=io.StringIO(),
    )
    return study


def command_report() -> dict:
    out = io.StringIO()
    call_command("validation_report", "val", "--json", "--n-boot", "100", stdout=out)
    return json.loads(out.getvalue())


def test_the_page_shows_the_commands_figures_with_intervals(ranked, staff_client):
    report = command_report()
    html = staff_client.get("/dashboards/validation/val/").content.decode()
    assert escape(report["welch"]["text"]) in html and escape(report["paired_t"]["text"]) in html
    for name in ("original", "optimised"):
        c = report["per_condition"][name]
        assert (
            f'{c["mean"]:.2f} <span class="muted">[{c["ci_low"]:.2f}, {c["ci_high"]:.2f}]' in html
        )
    d = report["bootstrap"]["difference"]
    assert f'{d["value"]:.3f} <span class="muted">[{d["ci_low"]:.3f}, {d["ci_high"]:.3f}]' in html
    assert "8 of the 8 annotators are synthetic" in html
    need = report["power"]["paired_t"]["n_needed"]
    assert f"alpha 0.05: {need}" in html
    for a in report["annotators"]:
        assert a["annotator"] in html
    listing = staff_client.get("/dashboards/validation/").content.decode()
    assert 'href="/dashboards/validation/val/?study=default"' in listing
    svg = staff_client.get("/dashboards/validation/val/means.svg")
    assert svg.status_code == 200 and svg["Content-Type"].startswith("image/svg")
    assert b"<svg" in svg.content


def test_staff_only_and_unknown_studies(ranked, annotator_client, staff_client, client):
    assert annotator_client.get("/dashboards/validation/val/").status_code == 403
    assert client.get("/dashboards/validation/val/").status_code == 302
    assert staff_client.get("/dashboards/validation/nope/").status_code == 404
    assert staff_client.get("/dashboards/validation/default/").status_code == 404


def test_an_empty_study_says_what_is_missing(db, media_root, tmp_path, staff_client):
    give_role(staff_client.user, make_validation_study(tmp_path, slug="empty"))
    html = staff_client.get("/dashboards/validation/empty/").content.decode()
    assert "has no rankings to report yet" in html


def test_the_staff_api_gives_the_report(ranked, staff_client):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {tokens.issue(staff_client.user)[1]}")
    body = api.get("/api/staff/studies/val/validation/?n_boot=100").json()
    report = command_report()
    assert body["welch"] == report["welch"] and body["annotators"] == report["annotators"]
    assert api.get("/api/staff/studies/nope/validation/").status_code == 404
    refused = api.get("/api/staff/studies/default/validation/")
    assert refused.status_code == 400 and "not a validation one" in refused.json()["detail"]
    assert api.get("/api/staff/studies/val/validation/?n_boot=-1").status_code == 400
    user = APIClient()
    assert user.get("/api/staff/studies/val/validation/").status_code in (401, 403)
