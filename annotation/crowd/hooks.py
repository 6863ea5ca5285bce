"""Prolific's webhooks at ``/hooks/prolific/``: a submission's status change, taken only
when its signature checks out as Prolific documents it ("Webhooks: Verifying"): the
base64 HMAC-SHA256, keyed with ``STEREORANK_PROLIFIC_WEBHOOK_SECRET``, of the
``X-Prolific-Request-Timestamp`` header followed by the raw body, in
``X-Prolific-Request-Signature``. A bad or missing signature, a timestamp more than
``WINDOW_S`` from now, or a delivery already taken (a replay) is a 403 that changes
nothing. The payload ("Webhooks: Receiving", ``submission.status.change``) carries the
participant's id: it is read for nothing and kept nowhere.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from annotation.crowd.models import HookDelivery, Submission
from annotation.models import Participation

WINDOW_S = 300
SIGNATURE = "HTTP_X_PROLIFIC_REQUEST_SIGNATURE"
TIMESTAMP = "HTTP_X_PROLIFIC_REQUEST_TIMESTAMP"


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """The signature Prolific sends with ``body`` at ``timestamp``."""
    digest = hmac.new(secret.encode(), timestamp.encode() + body, hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def refusal(secret: str, timestamp: str, given: str, body: bytes, now: float) -> str:
    """Why a delivery is refused ("" when its signature and timestamp check out); pure."""
    if not secret:
        return "no webhook secret is configured"
    if not given or not timestamp:
        return "unsigned"
    if not (timestamp.isascii() and timestamp.isdigit() and len(timestamp) <= 12):
        return "bad timestamp"
    sent = int(timestamp)
    if abs(now - sent) > WINDOW_S:
        return "timestamp outside the window"
    if not hmac.compare_digest(signature(secret, timestamp, body).encode(), given.encode()):
        return "bad signature"
    return ""


@csrf_exempt
@require_POST
def prolific(request: HttpRequest) -> HttpResponse:
    secret = settings.STEREORANK["PROLIFIC"]["WEBHOOK_SECRET"]
    given, stamp = request.META.get(SIGNATURE, ""), request.META.get(TIMESTAMP, "")
    body = request.body
    if why := refusal(secret, stamp, given, body, time.time()):
        return JsonResponse({"detail": f"Refused: {why}."}, status=403)
    try:
        payload = json.loads(body)
    except ValueError:
        return JsonResponse({"detail": "The body is not JSON."}, status=400)
    if not isinstance(payload, dict):
        return JsonResponse({"detail": "The body is not a JSON object."}, status=400)
    digest = hashlib.sha256(given.encode()).hexdigest()
    try:
        with transaction.atomic():
            HookDelivery.objects.filter(
                received_at__lt=timezone.now() - timedelta(seconds=2 * WINDOW_S)
            ).delete()
            HookDelivery.objects.create(digest=digest)
            updated = _apply(payload)
    except IntegrityError:
        return JsonResponse({"detail": "Refused: a replay."}, status=403)
    return JsonResponse({"updated": updated})


def _apply(payload: dict) -> int:
    """A submission's new status, for a submission we know (0 or 1 rows)."""
    if payload.get("event_type") != "submission.status.change":
        return 0
    sub_id, status = str(payload.get("resource_id", "")), str(payload.get("status", ""))
    if not sub_id or not status:
        return 0
    if updated := Submission.objects.filter(submission_id=sub_id).update(status=status[:40]):
        return updated
    part = Participation.objects.filter(session_id=sub_id).only("pk", "study_id").first()
    if part is None:
        return 0
    Submission.objects.create(
        study_id=part.study_id, submission_id=sub_id, participation=part, status=status[:40]
    )
    return 1
