"""Prolific's webhooks at /hooks/prolific/, tried as an attacker would: the signature is
checked as docs.prolific.com's "Webhooks: Verifying" documents it (base64 HMAC-SHA256 of
the timestamp header followed by the raw body), against the raw bytes; a bad or missing
signature, a timestamp older than five minutes, a replay, a body re-serialised after
signing: each a 403 that changes nothing. A good one updates the submission's status."""

import base64
import hashlib
import hmac
import json
import time

import pytest
from django.test import Client

from annotation.crowd.hooks import signature
from annotation.crowd.models import HookDelivery, Submission
from tests.crowd.crowd_study import SECRET, configure, make_study, participant

URL = "/hooks/prolific/"


@pytest.fixture
def study(settings, db):
    fake = configure(settings)
    yield make_study()
    fake.close()


def post(body: bytes, stamp: str, sig: str | None):
    headers = {"HTTP_X_PROLIFIC_REQUEST_TIMESTAMP": stamp}
    if sig is not None:
        headers["HTTP_X_PROLIFIC_REQUEST_SIGNATURE"] = sig
    return Client().post(URL, data=body, content_type="application/json", **headers)


def signed(payload: dict, at: float | None = None, secret: str = SECRET):
    # Compact separators on purpose: what is signed is these exact bytes.
    body = json.dumps(payload, separators=(",", ":")).encode()
    stamp = str(int(at if at is not None else time.time()))
    return body, stamp, signature(secret, stamp, body)


def event(sub: str, status: str = "APPROVED") -> dict:
    return {
        "resource_id": sub,
        "event_type": "submission.status.change",
        "participant_id": "5f1a2b3c4d5e6f7a8b9c0d1e",
        "status": status,
    }


def test_our_signature_is_prolifics_documented_one():
    body, stamp = b'{"a":1}', "1733580000"
    by_hand = base64.b64encode(
        hmac.new(SECRET.encode(), (stamp + '{"a":1}').encode(), hashlib.sha256).digest()
    ).decode()
    assert signature(SECRET, stamp, body) == by_hand


def test_a_good_delivery_updates_the_status_and_keeps_no_participant_id(study):
    part = participant(study, "ann")
    response = post(*signed(event(part.session_id, "AWAITING REVIEW")))
    assert response.status_code == 200 and response.json() == {"updated": 1}
    row = Submission.objects.get(submission_id=part.session_id)
    assert (row.status, row.participation) == ("AWAITING REVIEW", part)
    assert "5f1a2b3c4d5e6f7a8b9c0d1e" not in json.dumps(
        list(Submission.objects.values()), default=str
    )
    assert post(*signed(event(part.session_id), at=time.time() + 1)).status_code == 200
    assert Submission.objects.get(submission_id=part.session_id).status == "APPROVED"


@pytest.mark.parametrize(
    "attack",
    [
        "wrong secret",
        "no signature",
        "tampered body",
        "reserialised",
        "old",
        "future",
        "replay",
        "not a number",
    ],  # fmt: skip
)
def test_every_forgery_is_refused_and_changes_nothing(study, attack):
    part = participant(study, "ann")
    Submission.objects.create(
        study=study, submission_id=part.session_id, participation=part, status="AWAITING REVIEW"
    )
    body, stamp, sig = signed(event(part.session_id, "REJECTED"))
    if attack == "replay":
        assert post(body, stamp, sig).status_code == 200
        assert Submission.objects.get().status == "REJECTED"  # the first delivery counted
        Submission.objects.update(status="AWAITING REVIEW")
    elif attack == "wrong secret":
        body, stamp, sig = signed(event(part.session_id, "REJECTED"), secret="guessed")
    elif attack == "no signature":
        sig = None
    elif attack == "tampered body":
        body = body.replace(b"REJECTED", b"APPROVED")
    elif attack == "reserialised":  # same JSON, other bytes: the raw body is what counts
        body = json.dumps(json.loads(body), indent=1).encode()
    elif attack == "not a number":  # signed, but a timestamp no window can judge
        body = json.dumps(event(part.session_id, "REJECTED")).encode()
        stamp = "nan"
        sig = signature(SECRET, stamp, body)
    elif attack in ("old", "future"):
        shift = -301 if attack == "old" else 301
        body, stamp, sig = signed(event(part.session_id, "REJECTED"), at=time.time() + shift)
    deliveries = HookDelivery.objects.count()
    response = post(body, stamp, sig)
    assert response.status_code == 403, attack
    assert response.json()["detail"].startswith("Refused")
    assert Submission.objects.get(submission_id=part.session_id).status == "AWAITING REVIEW"
    assert HookDelivery.objects.count() == deliveries


def test_no_secret_configured_refuses_everything(study, settings):
    conf = {**settings.STEREORANK["PROLIFIC"], "WEBHOOK_SECRET": ""}
    settings.STEREORANK = {**settings.STEREORANK, "PROLIFIC": conf}
    body, stamp, _ = signed(event("x"))
    assert post(body, stamp, signature("", stamp, body)).status_code == 403


def test_a_get_or_garbage_is_refused(study):
    assert Client().get(URL).status_code == 405
    body = b"not json"
    stamp = str(int(time.time()))
    assert post(body, stamp, signature(SECRET, stamp, body)).status_code == 400
