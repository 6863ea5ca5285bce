"""Day two of a real study (the portal's side): consent an ethics board accepts, a way
out for the excluded, the window's width with each ranking, resubmits answered as saved,
and the attention-check failures of the past listed and made good in one action."""

import io
import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from annotation.access.scope import SYSTEM
from annotation.assignment.next_task import next_task
from annotation.catalogue.loading import ensure_consent_text, read_catalogue
from annotation.models import AnnotatorStatus, ConsentText, Ranking, RankingTask, StatusChange
from annotation.models.studies import Participation, Study, default_study
from annotation.participants import admission, consent, content, services
from annotation.participants.recruitment import Arrival
from annotation.quality import standing
from annotation.rankings.exports import pseudonym

FILLED = {
    "controller": "University of Utrecht, Faculty of Science",
    "contact_email": "stereotypes@uu.example",
    "dpo_contact": "privacy@uu.example",
    "legal_basis": "explicit_consent",
    "retention": "until 31 December 2031",
    "complaint": "Autoriteit Persoonsgegevens, Postbus 93374, 2509 AJ Den Haag",
    "ethics_reference": "FETC Science, approval 24-1234",
    "text": "You are invited to rank images of people at work.",
}


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_the_catalogues_consent_is_a_template_that_names_what_to_fill_in(db):
    template = ensure_consent_text()
    assert consent.missing_fields(template) == list(ConsentText.REQUIRED)
    assert consent.TEMPLATE_MARK in template.text.lower()
    demo = ConsentText(**read_catalogue()["consent"]["demonstration"])
    assert consent.missing_fields(demo) == []  # the demonstration fills every field


def test_publishing_from_a_file_makes_a_new_version_and_refuses_bad_input_whole(db, tmp_path):
    study = default_study()
    before = ensure_consent_text(study=study)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**FILLED, "contact_email": "not an address"}))
    with pytest.raises(CommandError, match="^Consent text refused: contact e-mail: "):
        run("consent", "--file", str(bad))
    bad.write_text(json.dumps({"controler": "typo"}))
    with pytest.raises(CommandError, match="^Unknown consent field"):
        run("consent", "--file", str(bad))
    bad.write_text("[1, 2]")
    with pytest.raises(CommandError, match="expected a JSON object"):
        run("consent", "--file", str(bad))
    assert ConsentText.objects.filter(study=study).count() == 1  # nothing half written

    good = tmp_path / "consent.json"
    good.write_text(json.dumps(FILLED))
    out = run("consent", "--file", str(good))
    assert f"consent version {before.version + 1} (en), published" in out
    assert "complete in en" in out and "the study can open" in out
    newest = ensure_consent_text(study=study)
    assert consent.missing_fields(newest) == [] and not newest.demonstration
    assert "unchanged" in run("consent", "--file", str(good))  # same values: no new version
    assert ConsentText.objects.filter(study=study).count() == 2
    # --demo fills only what is missing: a complete, real text stays as it is
    assert "unchanged" in run("consent", "--demo")
    assert not ensure_consent_text(study=study).demonstration


def test_demo_values_are_marked_and_the_consent_page_shows_every_field(portal_client):
    run("consent", "--demo")
    text = ensure_consent_text()
    assert text.demonstration and consent.missing_fields(text) == []
    page = portal_client(consent=False).get(reverse("portal:consent")).content.decode()
    assert 'id="consent-demonstration"' in page
    consent.publish(text.study, FILLED)
    client = portal_client("second", consent=False)
    page = client.get(reverse("portal:consent")).content.decode()
    assert 'id="consent-demonstration"' not in page  # no demonstration value is left
    for name, value in FILLED.items():
        if name == "legal_basis":
            value = ConsentText.LegalBasis(value).label
        assert value.replace("'", "&#x27;") in page, name
    assert f'href="mailto:{FILLED["contact_email"]}"' in page


def test_open_studies_lacking_their_content_are_named_for_staff(db):
    study = Study.objects.create(slug="wave-1", name="Wave 1", platform="prolific")
    ensure_consent_text(study=study)
    lines = content.unready_open_studies(SYSTEM)
    assert any(line.startswith("Study 'wave-1': its consent text") for line in lines)
    consent.publish(study, FILLED)
    assert not any("'wave-1'" in line for line in content.unready_open_studies(SYSTEM))


@pytest.fixture
def participant(db, make_tasks):
    """A Prolific participant of an open study with a contact, consented, one task."""
    study = Study.objects.create(
        slug="wave-1",
        name="Wave 1",
        platform=Study.Platform.PROLIFIC,
        screen_out_code="SCR33N",
    )
    consent.publish(study, FILLED)
    make_tasks(2, k=3, study=study)
    participation = admission.enroll(study, Arrival("5f0c0ffee", "s-1", "st-1"))
    services.give_consent(participation.annotator)
    client = Client()
    client.force_login(participation.annotator.user)
    return client, participation


def test_an_excluded_participant_is_told_why_whom_to_write_to_and_gets_the_code(participant):
    client, participation = participant
    profile = participation.annotator
    standing._move(profile, AnnotatorStatus.EXCLUDED, "2 of 2 attention checks failed")
    participation.refresh_from_db()
    assert participation.outcome == Participation.Outcome.SCREENED_OUT
    assert participation.screen_out_reason == Participation.ScreenOut.EXCLUDED
    for page in ("portal:home", "portal:rank"):
        response = client.get(reverse(page))
        assert response.status_code == 302 and response.url == reverse("portal:screened_out")
    html = client.get(reverse("portal:screened_out")).content.decode()
    assert "2 of 2 attention checks failed" in html
    assert 'href="mailto:stereotypes@uu.example"' in html
    assert 'id="screen-out-code">SCR33N<' in html
    assert pseudonym(profile.user_id) in html
    left = client.post(reverse("portal:leave"))
    assert left.url == "https://app.prolific.com/submissions/complete?cc=SCR33N"

    # Reinstated by staff: the screen-out is taken back, and tasks come again.
    staff = get_user_model().objects.create_user("lab", is_staff=True)
    standing.reinstate(profile, staff, "the phone layout hid the checks")
    participation.refresh_from_db()
    assert participation.outcome == Participation.Outcome.TAKING_PART
    assert next_task(profile) is not None
    assert client.get(reverse("portal:home")).status_code == 200


def test_an_exclusion_from_before_is_screened_out_on_the_next_visit(participant):
    client, participation = participant
    # Excluded before exclusions screened participants out: only the status moved.
    from annotation.models import AnnotatorProfile

    AnnotatorProfile.objects.filter(pk=participation.annotator_id).update(status="excluded")
    response = client.get(reverse("portal:home"))
    assert response.url == reverse("portal:screened_out")
    participation.refresh_from_db()
    assert participation.screen_out_reason == Participation.ScreenOut.EXCLUDED


def test_an_excluded_account_without_a_platform_reads_why_and_the_contact(portal_client):
    consent.publish(default_study(), FILLED)
    client = portal_client()
    standing._move(client.profile, AnnotatorStatus.EXCLUDED, "gold score 0.10 below 0.30")
    html = client.get(reverse("portal:home")).content.decode()
    assert "gold score 0.10 below 0.30" in html and "stereotypes@uu.example" in html


def test_a_resubmit_with_another_order_is_answered_saved_and_the_first_stands(
    portal_client, make_tasks
):
    make_tasks(2, k=3)
    client = portal_client()
    assignment = next_task(client.profile)
    order = list(reversed(assignment.shown_order))
    form = {"task_id": assignment.task_id, "order": ",".join(map(str, order))}
    client.post(reverse("portal:rank"), {**form, "viewport_width": "390", "seconds_spent": "9"})
    stored = Ranking.objects.get()
    assert (stored.viewport_width, stored.seconds_spent) == (390, 9.0)

    again = {**form, "order": ",".join(map(str, assignment.shown_order))}
    response = client.post(reverse("portal:rank"), again, follow=True)
    texts = [str(m) for m in response.context["messages"]]
    assert texts and texts[0].startswith("Ranking saved.")
    assert Ranking.objects.count() == 1 and Ranking.objects.get().order == order
    assert response.context["task"].pk != assignment.task_id  # the next task
    assert response.headers["Cache-Control"].startswith("max-age=0")
    assert "no-store" in response.headers["Cache-Control"]


@pytest.mark.parametrize("width", ["", "wide", "-3", "0", "99999999"])
def test_a_garbled_width_from_a_browser_is_dropped_not_refused(portal_client, make_tasks, width):
    make_tasks(1, k=3)
    client = portal_client()
    assignment = next_task(client.profile)
    form = {"task_id": assignment.task_id, "order": ",".join(map(str, assignment.shown_order))}
    client.post(reverse("portal:rank"), {**form, "viewport_width": width})
    assert Ranking.objects.get().viewport_width is None


def test_the_api_records_a_width_and_refuses_one_out_of_range(annotator, make_tasks):
    make_tasks(2, k=3)
    api = annotator("api-user")
    task = api.post("/api/tasks/next/").json()
    url = f"/api/tasks/{task['id']}/ranking/"
    order = [item["id"] for item in task["items"]]
    refused = api.post(url, {"order": order, "viewport_width": 0}, format="json")
    assert refused.status_code == 400 and "viewport_width" in refused.json()
    assert not Ranking.objects.exists()
    made = api.post(url, {"order": order, "viewport_width": 1280}, format="json")
    assert made.status_code == 201 and Ranking.objects.get().viewport_width == 1280


def _check_task(make_tasks, position: int) -> RankingTask:
    (task,) = make_tasks(1, k=4)
    card = task.task_items.order_by("pk").values_list("item_id", flat=True)[0]
    RankingTask.objects.filter(pk=task.pk).update(check_item=card, check_position=position)
    task.refresh_from_db()
    return task


def test_past_check_failures_are_listed_with_dates_and_widths_and_reinstated_at_once(
    make_tasks, annotator, store_ranking
):
    staff = get_user_model().objects.create_user("lab", is_staff=True)
    people = []
    for name, width in (("phone-user", None), ("laptop-user", 1280)):
        profile = annotator(name).profile
        for _ in range(2):
            task = _check_task(make_tasks, position=3)
            items = [ti.item_id for ti in task.task_items.order_by("pk")]
            ranking = store_ranking(profile, task, items)  # the card left first: failed
            Ranking.objects.filter(pk=ranking.pk).update(viewport_width=width)
        standing.apply_policy(profile)
        profile.refresh_from_db()
        assert profile.status == AnnotatorStatus.EXCLUDED
        people.append(profile)
    careful = annotator("careful").profile
    task = _check_task(make_tasks, position=0)
    store_ranking(careful, task, [ti.item_id for ti in task.task_items.order_by("pk")])

    listing = run("attention_checks").splitlines()
    assert len(listing) == 2
    phone_line = next(line for line in listing if line.startswith(pseudonym(people[0].user_id)))
    assert "excluded  2 failed:" in phone_line and phone_line.count("width unknown") == 2
    assert "1280 px" in next(
        line for line in listing if line.startswith(pseudonym(people[1].user_id))
    )
    only = run("attention_checks", "--widths-unknown").splitlines()
    assert len(only) == 1 and only[0] == phone_line

    with pytest.raises(CommandError, match="needs --reason"):
        run("attention_checks", "--widths-unknown", "--reinstate", "--by", "lab")
    with pytest.raises(CommandError, match="There is no staff user 'nobody'"):
        run("attention_checks", "--reinstate", "--reason", "x", "--by", "nobody")
    assert not StatusChange.objects.filter(by=staff).exists()

    reason = "the phone layout hid the checks' instructions (fixed 2026-12-06)"
    out = run(
        "attention_checks", "--widths-unknown", "--reinstate", "--reason", reason, "--by", "lab"
    )
    assert out.splitlines()[-1] == f"1 reinstated: {reason}"
    people[0].refresh_from_db()
    people[1].refresh_from_db()
    assert (people[0].status, people[1].status) == ("ok", "excluded")
    change = StatusChange.objects.get(by=staff)
    assert (change.annotator_id, change.reason) == (people[0].pk, reason)
    assert "no warned or excluded annotator" not in run("attention_checks")


def test_the_admin_warns_of_open_studies_whose_consent_is_incomplete(admin_client):
    ensure_consent_text()  # the default study: open, on the catalogue's template
    page = admin_client.get(reverse("admin:annotation_study_changelist"))
    warnings = [str(m) for m in page.context["messages"] if m.level_tag == "warning"]
    assert any(w.startswith("Study 'default': its consent text") for w in warnings), warnings
    consent.publish(default_study(), FILLED)
    page = admin_client.get(reverse("admin:annotation_study_changelist"))
    assert not [m for m in page.context["messages"] if m.level_tag == "warning"]


def test_a_consent_version_someone_agreed_to_cannot_be_edited_in_the_admin(
    admin_client, portal_client
):
    text = ensure_consent_text()
    url = reverse("admin:annotation_consenttext_change", args=[text.pk])
    assert 'name="controller"' in admin_client.get(url).content.decode()
    portal_client("agrees")  # gives consent to this version
    page = admin_client.get(url).content.decode()
    assert 'name="controller"' not in page and 'name="text"' not in page


def test_the_admin_refuses_to_turn_quality_off_without_a_reason(admin_client):
    study = default_study()
    url = reverse("admin:annotation_study_change", args=[study.pk])
    form = {
        "slug": study.slug,
        "name": study.name,
        "kind": study.kind,
        "platform": "generic",
        "sampler": study.sampler,
        "question_format": "rank",
        "gold_per_occupation": 0,
        "checks_per_occupation": 1,
        "quality_off_reason": "",
        "minimum_rankings": 1,
    }
    refused = admin_client.post(url, form)
    assert refused.status_code == 200
    assert "quality_off_reason" in refused.context["adminform"].form.errors
    study.refresh_from_db()
    assert study.gold_per_occupation == 1
    saved = admin_client.post(url, {**form, "quality_off_reason": "a pilot of the page"})
    assert saved.status_code == 302
    study.refresh_from_db()
    assert (study.gold_per_occupation, study.quality_off_reason) == (0, "a pilot of the page")


def test_a_due_check_task_is_open_to_every_annotator_whatever_its_overlap(
    make_tasks, annotator, settings
):
    """So the supply of checks follows the demand: with one check task of overlap 1, the
    second annotator whose check is due meets it too (it used to close after one)."""
    rates = {"GOLD_RATE": 0.0, "CHECK_RATE": 1.0, "AGREEMENT_RATE": 0.0}
    settings.STEREORANK = {**settings.STEREORANK, **rates}
    make_tasks(3, k=3)
    check = _check_task(make_tasks, position=0)
    assert check.overlap == 1
    for name in ("first", "second"):
        profile = annotator(name).profile
        assignment = next_task(profile)
        assert assignment.task_id == check.pk
        card = check.check_item_id
        order = [card, *(i for i in assignment.shown_order if i != card)]
        _, created = services.submit_ranking(profile, check.pk, order)
        assert created
    check.refresh_from_db()
    assert check.ranking_count == 2  # past its overlap, as a gold task may be
    settings.STEREORANK = {**settings.STEREORANK, "CHECK_RATE": 0.0}
    third = annotator("third").profile
    assert next_task(third).task_id != check.pk  # not due: a full task stays closed


def test_the_progress_dashboard_warns_of_open_studies_whose_consent_is_incomplete(
    admin_client,
):
    ensure_consent_text()
    page = admin_client.get(reverse("dashboards:progress")).content.decode()
    assert 'id="consent-warnings"' in page and "Study &#x27;default&#x27;: its consent" in page
    consent.publish(default_study(), FILLED)
    page = admin_client.get(reverse("dashboards:progress")).content.decode()
    assert 'id="consent-warnings"' not in page


def test_a_task_id_past_any_row_is_not_found_not_a_server_error(annotator):
    api = annotator("fuzzed")
    url = "/api/tasks/2454115420943716712448/ranking/"  # what the schema fuzzer sent
    response = api.post(url, {"order": [1, 2]}, format="json")
    assert response.status_code == 404 and "does not exist" in response.json()["detail"]
