"""docs/privacy.md, sentence by sentence: each is quoted by a test that checks it.

The page is one sentence per line (list items and paragraphs alike); a test quotes the
sentences it checks with ``@says`` (tests/privacy_claims.py). The first test fails when
a sentence is quoted by no test, or a quote is no longer on the page; the others check
the claims not checked elsewhere: where the erasure itself is tested
(test_annotation_erasure_traces.py, tests/training/test_training_snapshot_erasure.py)
and what expires and what is logged (test_annotation_privacy_logs.py).
"""

from __future__ import annotations

import ast
import hashlib
import hmac
import os
import re
from pathlib import Path

import pytest
from crowd_fakes import FakeProlific, join
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.urls import reverse
from privacy_claims import PAGE, says

from annotation.assignment.next_task import next_task
from annotation.models import (
    DemographicField,
    Erasure,
    GroupQuota,
    Participation,
    QuotaSeat,
    RankedItem,
    Ranking,
    Study,
)
from annotation.models.reports import QualityAnnotatorRow
from annotation.participants import services
from annotation.participants.erasure import erase_annotator
from annotation.quality import store as quality_store
from annotation.rankings import selectors
from annotation.rankings.exports import PSEUDONYM, annotator_for_pseudonym, pseudonym, ranking_rows
from training.snapshots.services import create_snapshot

ROOT = Path(__file__).resolve().parents[2]


def page_sentences() -> list[str]:
    """The page's sentences: every line that is not blank, a heading or code, without its
    list marker."""
    out, code = [], False
    for line in (ROOT / PAGE).read_text().splitlines():
        if line.startswith("```"):
            code = not code
        elif line.strip() and not code and not line.startswith("#"):
            out.append(re.sub(r"^(- |\d+\. )", "", line.strip()))
    return out


def quotes() -> dict[str, list[str]]:
    """Every sentence a test quotes with ``@says``: ``{sentence: [test, ...]}``."""
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "tests").rglob("*.py")):
        text = path.read_text()
        if "@says(" not in text:
            continue
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.FunctionDef):
                continue
            for decorator in node.decorator_list:
                if isinstance(decorator, ast.Call) and getattr(decorator.func, "id", "") == "says":
                    for arg in decorator.args:
                        found.setdefault(ast.literal_eval(arg), []).append(
                            f"{path.relative_to(ROOT)}::{node.name}"
                        )
    return found


@says(
    "This page states what stereorank keeps about a person who takes part, where, for how long, "
    "and what an erasure leaves.",
    "A test checks each sentence of it and quotes the sentence it checks "
    "(`tests/privacy_claims.py` says how).",
)
def test_every_sentence_of_the_page_is_quoted_by_a_test_that_checks_it():
    sentences, quoted = page_sentences(), quotes()
    assert len(sentences) == len(set(sentences)) >= 40
    assert [s for s in sentences if s not in quoted] == []  # a claim nothing checks
    assert [s for s in quoted if s not in sentences] == []  # a quote the page lost
    for sentence in sentences:  # one sentence a line, each ended
        assert sentence.endswith("."), sentence
        assert not re.search(r"[.!?] +[A-Z]", sentence[:-1]), sentence
    headings = [line for line in (ROOT / PAGE).read_text().splitlines() if line.startswith("#")]
    for heading in ("While a person takes part", "What an erasure deletes", "What it keeps"):
        assert f"## {heading}" in headings


@says(
    "How joining, quotas, consent and withdrawal work, and why erasure works as it does, is in "
    "`docs/participants.md`.",
    "The reasons for deleting rankings rather than anonymising them, and how an erasure stays "
    "correct while others rank, are in the module docstring of "
    "`annotation/participants/erasure.py`.",
)
def test_the_pages_it_points_to_say_what_it_says_they_do():
    from annotation.participants import erasure

    headings = (ROOT / "docs/participants.md").read_text()
    for part in ("crowd platforms", "quotas", "Consent", "Withdrawal", "Why erasure works"):
        assert re.search(rf"^##.*{part}", headings, re.MULTILINE), part
    assert "Rankings are deleted, not anonymised" in erasure.__doc__
    assert "Two transactions, so that nothing can slip in between" in erasure.__doc__


@pytest.fixture
def prolific(db):
    study = Study.objects.create(
        slug="wave-p", name="Wave P", platform=Study.Platform.PROLIFIC, tasks_per_participant=2
    )
    return FakeProlific(study.slug)


@says(
    "The account is a row of Django's user table, and a participant who came by a crowd "
    "platform's link gets a random `p-` username and no password.",
    "A crowd platform's participant id is never stored: the participation (`Participation`) "
    "keeps HMAC-SHA256 of it under `STEREORANK_EXTERNAL_ID_KEY`.",
    "The platform's session and study ids are kept on the participation as the platform gave them.",
)
def test_a_crowd_participant_is_a_random_name_and_a_keyed_hash(prolific):
    pid, session = prolific.new_participant_id(), "5e55" * 6
    join(Client(REMOTE_ADDR="198.18.7.7"), prolific.link(pid, session))
    participation = Participation.objects.select_related("annotator__user").get()
    user = participation.annotator.user
    assert re.fullmatch(r"p-[0-9a-f]{16}", user.username) and not user.has_usable_password()
    key = settings.STEREORANK["EXTERNAL_ID_KEY"].encode()
    digest = hmac.new(key, f"prolific:{pid}".encode(), hashlib.sha256).hexdigest()
    assert participation.external_id_hash == digest
    assert (participation.session_id, participation.platform_study_id) == (
        session,
        prolific.study_id,
    )
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            assert pid not in repr(cursor.fetchall()), table


@says(
    "Demographic answers are kept on the annotator's profile (`AnnotatorProfile.demographics`) "
    "until the person erases them.",
    "Rankings are kept with the order given, the order shown, the time spent and when "
    "(`Ranking`, `RankedItem`), until the person erases them.",
    "The account stays, renamed and deactivated, with its consent history (when each consent "
    "was given and withdrawn), so that the processing before the withdrawal can be shown to "
    "have been lawful.",
    "One `Erasure` row records when, how many rankings, and whether the participant or staff "
    "asked, and names nobody.",
)
def test_answers_and_rankings_stay_until_erased_the_consent_history_after(
    annotator, make_tasks, store_ranking
):
    DemographicField.objects.create(key="age_band", label="Age band", choices=["18-24"])
    profile = annotator("dana").profile
    services.save_demographics(profile, {"age_band": "18-24"})
    (task,) = make_tasks(1, 3)
    items = sorted(task.items.values_list("pk", flat=True))
    store_ranking(profile, task, items, shown=items[::-1], seconds=12.5)
    profile.refresh_from_db()
    assert profile.demographics == {"age_band": "18-24"}
    ranking = Ranking.objects.get(annotator=profile)
    assert (ranking.order, ranking.shown_order, ranking.seconds_spent) == (items, items[::-1], 12.5)
    assert ranking.created_at and RankedItem.objects.filter(ranking=ranking).count() == 3

    erasure = erase_annotator(profile, via=Erasure.Via.PARTICIPANT)

    profile.refresh_from_db()
    assert profile.demographics == {} and not Ranking.objects.filter(annotator=profile)
    user = get_user_model().objects.get(pk=profile.user_id)
    assert user.username.startswith("erased-") and not user.is_active
    (consent,) = profile.consents.all()
    assert consent.given_at and consent.withdrawn_at
    assert {f.name for f in Erasure._meta.get_fields()} == {
        "id",
        "erased_at",
        "rankings_removed",
        "via",
    }
    assert (erasure.rankings_removed, erasure.via) == (1, "participant")
    assert set(Erasure.Via.values) == {"participant", "staff"}


@says("A quota seat (`QuotaSeat`) records which group a person takes part in.")
def test_a_quota_seat_records_the_group(annotator, make_tasks):
    gender = DemographicField.objects.create(key="gender", label="Gender", choices=["woman"])
    GroupQuota.objects.create(field=gender, value="woman", target=3)
    make_tasks(1, 3)
    profile = annotator("erin").profile
    services.save_demographics(profile, {"gender": "woman"})
    assert next_task(profile) is not None
    seat = QuotaSeat.objects.select_related("quota__field").get(annotator=profile)
    assert (seat.quota.field.key, seat.quota.value) == ("gender", "woman")


@says(
    "Exports and the staff pages name an annotator by pseudonym: `a-` and the first 12 hex "
    "digits of HMAC-SHA256 of the account's id under `STEREORANK_PSEUDONYM_KEY`.",
    "The progress dashboard also shows staff the username of each annotator whose consent stands.",
    "Exports name an annotator by pseudonym, never by username or crowd id, and once the "
    "account is erased the pseudonym leads to an account with no data.",
)
def test_exports_and_staff_pages_name_a_pseudonym(annotator, make_tasks, store_ranking):
    profile = annotator("frank-the-annotator").profile
    (task,) = make_tasks(1, 3)
    store_ranking(profile, task, sorted(task.items.values_list("pk", flat=True)))
    key = settings.STEREORANK["PSEUDONYM_KEY"].encode()
    name = "a-" + hmac.new(key, str(profile.user_id).encode(), hashlib.sha256).hexdigest()[:12]
    assert pseudonym(profile.user_id) == name and PSEUDONYM.fullmatch(name)
    rows = list(ranking_rows())
    assert [r["annotator"] for r in rows] == [name]
    assert "frank-the-annotator" not in repr(rows)
    staff = get_user_model().objects.create_superuser("boss", password="pw-123456")
    client = Client()
    client.force_login(staff)
    html = client.get(reverse("dashboards:progress")).content.decode()
    assert name in html and "frank-the-annotator" in html
    services.withdraw_consent(profile)
    html = client.get(reverse("dashboards:progress")).content.decode()
    assert name not in html and "frank-the-annotator" not in html

    erase_annotator(profile, via=Erasure.Via.STAFF)

    found = annotator_for_pseudonym(name)
    assert found.erased_at and found.demographics == {} and not found.rankings.exists()
    assert not found.user.is_active


@says(
    "A snapshot's lineage names annotators by pseudonym only (who was left out and why, "
    "reliability weights).",
    "Group labels are frozen only for groups of `STEREORANK_GROUP_K` (5 by default) or more "
    "annotators.",
)
def test_snapshots_name_pseudonyms_and_keep_only_groups_of_k(settings, annotator, make_tasks):
    if "STEREORANK_GROUP_K" not in os.environ:
        assert settings.STEREORANK["GROUP_K"] == 5
    settings.STEREORANK = {**settings.STEREORANK, "GROUP_K": 2}
    DemographicField.objects.create(key="gender", label="Gender", choices=["woman", "man"])
    tasks = make_tasks(1, 3, overlap=3, occupation="nurse") + make_tasks(
        1, 3, overlap=3, occupation="pilot"
    )
    for name, gender in (("gina-x", "woman"), ("hana-x", "woman"), ("ivan-x", "man")):
        profile = annotator(name).profile
        services.save_demographics(profile, {"gender": gender})
        for _ in tasks:
            assignment = next_task(profile)
            services.submit_ranking(profile, assignment.task_id, sorted(assignment.shown_order))
    snapshot = create_snapshot(seed=0, eval_fraction=0.5, weighting="reliability")
    assert set(snapshot.group_labels["gender"]) == {"woman"}  # "man" is one person
    named = set(snapshot.label_weighting["annotators"]) | set(snapshot.exclusions["annotators"])
    assert named and all(PSEUDONYM.fullmatch(n) for n in named)
    assert "-x" not in repr((snapshot.exclusions, snapshot.label_weighting))


@says(
    "The quality report is stored with each annotator's pseudonym and figures "
    "(`QualityReport`, `QualityAnnotatorRow`) until the data change and it is computed again."
)
def test_the_quality_report_is_stored_with_pseudonyms_until_recomputed(
    annotator, make_tasks, store_ranking
):
    tasks = make_tasks(2, 3, overlap=2)
    first = annotator("jo").profile
    store_ranking(first, tasks[0], sorted(tasks[0].items.values_list("pk", flat=True)))
    study = first.study
    report = quality_store.refresh(False, 10, study)
    rows = [r.row for r in QualityAnnotatorRow.objects.filter(report=report)]
    assert [r["pseudonym"] for r in rows] == [pseudonym(first.user_id)]
    assert not quality_store.served_report(False, 10, study=study).stale
    second = annotator("kim").profile
    store_ranking(second, tasks[0], sorted(tasks[0].items.values_list("pk", flat=True)))
    assert quality_store.served_report(False, 10, study=study).stale  # the data changed
    again = quality_store.refresh(False, 10, study)
    names = {r.row["pseudonym"] for r in QualityAnnotatorRow.objects.filter(report=again)}
    assert names == {pseudonym(first.user_id), pseudonym(second.user_id)}


@says(
    "A participant asks for an erasure on the portal or through the API, and staff erase a "
    "person's data with `manage.py erase PSEUDONYM`."
)
def test_the_three_doors_of_an_erasure(annotator, portal_client, capsys):
    api = annotator("olav")
    assert api.post(reverse("api-erasure")).status_code == 204
    portal = portal_client("pia")
    response = portal.post(reverse("portal:withdraw"), {"choice": "erase"})
    assert response.status_code == 302
    staff_erased = annotator("quinn").profile
    call_command("erase", pseudonym(staff_erased.user_id), "--no-input")
    vias = sorted(Erasure.objects.values_list("via", flat=True))
    assert vias == ["participant", "participant", "staff"]
    for client in (api, portal):
        assert client.profile.__class__.objects.get(pk=client.profile.pk).erased_at


@says(
    "Withdrawing consent without erasure keeps the data, and the person's rankings stop "
    "counting in labels, exports and snapshots built from then on."
)
def test_withdrawal_without_erasure_keeps_the_data_out_of_everything_built(
    annotator, make_tasks, store_ranking
):
    tasks = make_tasks(2, 3, 2, occupation="nurse") + make_tasks(1, 3, 2, occupation="pilot")
    stays, leaves = annotator("rae").profile, annotator("sol").profile
    for task in tasks:
        store_ranking(stays, task, sorted(task.items.values_list("pk", flat=True)))
    store_ranking(leaves, tasks[0], sorted(tasks[0].items.values_list("pk", flat=True)))

    services.withdraw_consent(leaves)

    assert Ranking.objects.filter(annotator=leaves).count() == 1  # kept
    assert not selectors.counted_rankings().filter(annotator=leaves).exists()
    assert pseudonym(leaves.user_id) not in {r["annotator"] for r in ranking_rows()}
    assert create_snapshot(seed=0, eval_fraction=0.5).ranking_count == 3
