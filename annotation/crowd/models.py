"""The crowd platform's records of a study: where it is published (``PlatformStudy``), its
submissions as the platform reports them (``Submission``), and the ledger: every decision
about a person's pay and every payment (``LedgerEntry``, ``BulkPayment``), with the
webhook deliveries already taken (``HookDelivery``, against replays).

What is kept of a person: the submission id (Prolific's ``SESSION_ID``, which the
participation holds too) and the participation it belongs to. The platform's participant
id is never stored: the calls that need it read it from the platform and hold it in
memory. At erasure the participation goes (``SET_NULL``) and a ledger row stays, a
payment record with the submission id and the amount (docs/privacy.md).
"""

from django.conf import settings
from django.db import models
from django.db.models import Q


class PlatformStudy(models.Model):
    """Our study as published on a crowd platform: one per study (publishing twice finds it)."""

    class Status(models.TextChoices):
        UNPUBLISHED = "unpublished", "Created, not published"
        ACTIVE = "active", "Published"
        PAUSED = "paused", "Paused (every place taken)"

    study = models.OneToOneField(
        "annotation.Study", on_delete=models.PROTECT, related_name="platform_study"
    )
    platform = models.CharField(max_length=20)
    external_id = models.CharField(max_length=100, unique=True)
    status = models.CharField(max_length=20, choices=Status.choices)
    currency = models.CharField(max_length=3, blank=True, help_text="As the platform reads it.")
    reward_cents = models.PositiveIntegerField()
    places = models.PositiveIntegerField()
    minutes = models.PositiveIntegerField()
    # The platform's filters as last sent (its own shape), and the groups since removed.
    screening = models.JSONField(default=list, blank=True)
    removed_groups = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    published_at = models.DateTimeField(null=True, blank=True)
    paused_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.platform} {self.external_id} ({self.status})"


class Submission(models.Model):
    """One submission as the platform last reported it (sync or webhook), matched to our
    participation by its id; ``participation`` is null for one we never saw arrive. It goes
    with its participation (an erasure); the ledger keeps the payment record."""

    study = models.ForeignKey(
        "annotation.Study", on_delete=models.PROTECT, related_name="crowd_submissions"
    )
    submission_id = models.CharField(max_length=100, unique=True)
    participation = models.ForeignKey(
        "annotation.Participation",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="crowd_submissions",
    )
    status = models.CharField(max_length=40)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["pk"]

    def __str__(self) -> str:
        return f"submission {self.submission_id} ({self.status})"


class BulkPayment(models.Model):
    """One bulk bonus payment, written with the platform's id BEFORE its pay call is sent.

    ``set_up``: created on the platform, the pay call not yet sent; ``sending``: the pay
    call is (or was) in flight: never sent again; ``sent``: the platform took it;
    ``reconciled``: the platform's records show every line paid; ``unreconciled``: the
    answer was lost and the records do not (yet) show every line: for a person."""

    class State(models.TextChoices):
        SET_UP = "set_up", "Set up, not paid"
        SENDING = "sending", "Pay call sent, answer not yet read"
        SENT = "sent", "Pay call taken"
        RECONCILED = "reconciled", "Paid, checked against the platform's records"
        UNRECONCILED = "unreconciled", "Answer lost, not shown paid: for a person"

    study = models.ForeignKey(
        "annotation.Study", on_delete=models.PROTECT, related_name="bulk_payments"
    )
    external_id = models.CharField(max_length=100, unique=True)
    state = models.CharField(max_length=20, choices=State.choices)
    currency = models.CharField(max_length=3, blank=True)
    total_cents = models.PositiveIntegerField(help_text="Bonuses, before fees.")
    charged_cents = models.PositiveIntegerField(
        null=True, blank=True, help_text="What the platform said it deducts, fees included."
    )
    note = models.TextField(blank=True)
    by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    checked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-pk"]

    def __str__(self) -> str:
        return f"bulk payment {self.external_id} ({self.state})"


class LedgerEntry(models.Model):
    """One decision about a person's pay (approve, reject, hold for a person) or one bonus
    line, in order. Approvals and rejections are final on the platform; a bonus line
    belongs to its bulk payment and is written before that payment's pay call."""

    class Kind(models.TextChoices):
        APPROVE = "approve", "Approved"
        REJECT = "reject", "Rejected"
        HOLD = "hold", "Held for a person"
        BONUS = "bonus", "Bonus"

    study = models.ForeignKey("annotation.Study", on_delete=models.PROTECT, related_name="ledger")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    submission_id = models.CharField(max_length=100)
    participation = models.ForeignKey(
        "annotation.Participation",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="ledger_entries",
    )
    reason = models.TextField()
    amount_cents = models.PositiveIntegerField(null=True, blank=True)
    payment = models.ForeignKey(
        BulkPayment, null=True, blank=True, on_delete=models.PROTECT, related_name="lines"
    )
    by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pk"]
        verbose_name_plural = "ledger entries"
        constraints = [
            # One bonus per submission, ever: a second run cannot pay a person again.
            models.UniqueConstraint(
                fields=["submission_id"], condition=Q(kind="bonus"), name="one_bonus_per_submission"
            ),
            # One final decision (approve or reject) per submission.
            models.UniqueConstraint(
                fields=["submission_id"],
                condition=Q(kind__in=["approve", "reject"]),
                name="one_decision_per_submission",
            ),
            models.CheckConstraint(
                condition=Q(kind="bonus", amount_cents__isnull=False, payment__isnull=False)
                | (~Q(kind="bonus") & Q(amount_cents__isnull=True)),
                name="bonus_lines_have_an_amount_and_payment",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.submission_id}"


class HookDelivery(models.Model):
    """A webhook delivery already taken (SHA-256 of its signature): the same delivery
    again is a replay. Rows older than the replay window are deleted as new ones come."""

    digest = models.CharField(max_length=64, unique=True)
    received_at = models.DateTimeField(auto_now_add=True, db_index=True)
