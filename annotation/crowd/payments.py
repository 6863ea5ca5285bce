"""Bonuses paid exactly once (``bonus``) and checked against the platform's own records
(``reconcile``).

Prolific's "Pay bonuses" call is not idempotent (a repeated call pays everyone again) and
asynchronous. So a bonus run sets up the bulk payment, then, in one transaction, writes
the ``BulkPayment`` (state ``sending``, with the platform's id) and one ``LedgerEntry`` per
submission (unique per submission: nobody gets two), and only after that commits sends
the pay call, once. A run that lost the answer (time-out, dropped connection, crash)
never sends it again: the next run, or the same one, reads each submission's
``bonus_payments`` and marks the payment ``reconciled`` when every line shows paid, else
``unreconciled``, for a person, with what is known.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import ROUND_HALF_UP, Decimal

from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from annotation.crowd.models import BulkPayment, LedgerEntry, Submission
from annotation.crowd.platform import AnswerLost, CrowdPlatform, PlatformError
from annotation.crowd.services import Report, client, platform_study
from annotation.models import Participation, Study
from annotation.rankings.selectors import counted_rankings
from core.errors import Conflict

CENT = Decimal("0.01")
OPEN_STATES = (BulkPayment.State.SENDING, BulkPayment.State.SENT)
# Prolific pays "in the following minutes": a sent payment still not shown paid after
# this long goes to a person (Prolific may have failed it, e.g. for want of funds).
SENT_GRACE = timedelta(hours=24)


def reconcile(study: Study, platform: CrowdPlatform, report: Report) -> None:
    """Check every payment not yet reconciled against the platform's records."""
    pending = BulkPayment.objects.filter(
        study=study, state__in=[*OPEN_STATES, BulkPayment.State.UNRECONCILED]
    )
    for payment in pending:
        _check(payment, platform, report)


def _check(payment: BulkPayment, platform: CrowdPlatform, report: Report) -> None:
    lines = list(payment.lines.all())
    unpaid = [
        line.submission_id
        for line in lines
        if line.amount_cents not in platform.submission(line.submission_id).bonus_cents
    ]
    payment.checked_at = timezone.now()
    if not unpaid:
        payment.state = BulkPayment.State.RECONCILED
        report.say(f"payment {payment.external_id}: every line shows paid (reconciled)")
    elif payment.state == BulkPayment.State.SENT and (
        payment.sent_at is None or timezone.now() - payment.sent_at < SENT_GRACE
    ):
        report.say(
            f"payment {payment.external_id}: sent, {len(unpaid)} of {len(lines)} lines not yet "
            "shown paid (Prolific pays in the following minutes)"
        )
    else:
        how = (
            f"Sent {payment.sent_at:%Y-%m-%d %H:%M}, not paid within {SENT_GRACE}"
            if payment.state == BulkPayment.State.SENT
            else "The pay call's answer was lost"
        )
        payment.state = BulkPayment.State.UNRECONCILED
        payment.note = (
            f"{how}; {len(unpaid)} of {len(lines)} lines show no "
            f"bonus on Prolific ({', '.join(unpaid[:10])}{'...' if len(unpaid) > 10 else ''}). "
            "Never sent again: a person checks on Prolific (it may still arrive) and pays by "
            "hand if it does not."
        )
        report.say(f"payment {payment.external_id}: UNRECONCILED, for a person: {payment.note}")
    payment.save(update_fields=["state", "note", "checked_at"])


def owed(study: Study, per_ranking: Decimal) -> tuple[list[tuple[Participation, Decimal]], list]:
    """Who a bonus run would pay (the approved submissions of first participations that have
    no bonus yet), with the amount: ``per_ranking`` for each ranking that counts (an excluded
    annotator's count for nothing, though their submission was approved); and the
    duplicates listed for a person."""
    approved = set(
        LedgerEntry.objects.filter(study=study, kind=LedgerEntry.Kind.APPROVE).values_list(
            "submission_id", flat=True
        )
    ) | set(
        Submission.objects.filter(study=study, status="APPROVED").values_list(
            "submission_id", flat=True
        )
    )
    paid = set(
        LedgerEntry.objects.filter(kind=LedgerEntry.Kind.BONUS).values_list(
            "submission_id", flat=True
        )
    )
    counted = dict(
        counted_rankings(studies=[study])
        .order_by()
        .values("annotator")
        .annotate(n=Count("pk"))
        .values_list("annotator", "n")
    )
    rows = (
        Participation.objects.filter(study=study)
        .exclude(session_id="")
        .exclude(session_id__in=paid)
        .order_by("pk")
    )
    pay, duplicates, seen = [], [], set()
    for part in rows:
        n = counted.get(part.annotator_id, 0)
        first = part.session_id not in seen
        seen.add(part.session_id)
        if (part.duplicate or not first) and n:
            duplicates.append(part)  # whatever its review: a person decides
        elif n and part.session_id in approved:
            pay.append((part, (per_ranking * n).quantize(CENT, ROUND_HALF_UP)))
    return pay, duplicates


def bonus(
    study: Study,
    per_ranking: Decimal,
    max_total: Decimal | None,
    apply: bool,
    by=None,
    platform: CrowdPlatform | None = None,
) -> Report:
    """Pay ``per_ranking`` (in the study's currency) for each counted ranking of every approved
    first participation not paid yet: a dry run unless ``apply``; refused above
    ``max_total``."""
    if per_ranking <= 0:
        raise Conflict("--per-ranking must be above 0.")
    record = platform_study(study)
    platform = platform or client()
    report = Report()
    reconcile(study, platform, report)
    pay, duplicates = owed(study, per_ranking)
    for part in duplicates:
        report.say(
            f"held for a person: {part.session_id} is a duplicate participation (a crowd id "
            "or a session id seen before)"
        )
    if not record.currency:
        record.currency = platform.study_currency(record.external_id)[:3]
        record.save(update_fields=["currency"])
    currency = record.currency or "the study's currency"
    total = sum((amount for _, amount in pay), Decimal("0"))
    for part, amount in pay:
        report.say(f"bonus {part.session_id}: {amount} {currency}")
    report.say(f"total {total} {currency} to {len(pay)} participants")
    if not pay:
        report.say("nothing to pay")
        return report
    if max_total is not None and total > max_total:
        raise Conflict(f"The total {total} is above --max-total {max_total}: nothing sent.")
    if not apply:
        report.say("dry run: nothing sent (--apply pays, once)")
        return report
    lines = [(part.session_id, amount) for part, amount in pay]
    set_up = platform.set_up_bonuses(record.external_id, lines)
    if set_up.total_cents != int(total * 100):
        raise Conflict(
            f"Prolific set up bulk payment {set_up.id} for {set_up.total_cents} cents, not the "
            f"{int(total * 100)} sent: nothing paid (that bulk payment is left unpaid)."
        )
    with transaction.atomic():
        payment = BulkPayment.objects.create(
            study=study,
            external_id=set_up.id,
            state=BulkPayment.State.SENDING,
            currency=record.currency,
            total_cents=int(total * 100),
            charged_cents=set_up.charged_cents,
            by=by,
        )
        LedgerEntry.objects.bulk_create(
            LedgerEntry(
                study=study,
                kind=LedgerEntry.Kind.BONUS,
                submission_id=part.session_id,
                participation=part,
                reason=f"{per_ranking} per ranking",
                amount_cents=int(amount * 100),
                payment=payment,
                by=by,
            )
            for part, amount in pay
        )
    _send(payment, platform, report)
    return report


def _send(payment: BulkPayment, platform: CrowdPlatform, report: Report) -> None:
    try:
        platform.pay(payment.external_id)
    except AnswerLost as lost:
        report.say(f"{lost.message} Never sent again; checking Prolific's records.")
        _check(payment, platform, report)
        return
    except PlatformError as refused:
        payment.state, payment.note = BulkPayment.State.UNRECONCILED, refused.message
        payment.save(update_fields=["state", "note"])
        report.say(f"payment {payment.external_id} refused, for a person: {refused.message}")
        return
    payment.state, payment.sent_at = BulkPayment.State.SENT, timezone.now()
    payment.save(update_fields=["state", "sent_at"])
    report.say(f"paid: bulk payment {payment.external_id} sent (Prolific pays within minutes)")
