"""The one interface every crowd platform's client offers (``CrowdPlatform``), in our
terms, so the services never speak one platform's dialect and MTurk or another can follow
Prolific (``annotation.crowd.prolific``); and the errors a client raises.

A ``RemoteSubmission``'s ``participant_id`` lives in memory only: the services never
write it anywhere (``annotation.crowd.models`` keeps the submission id alone).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Protocol

from core.errors import Conflict, StereorankError


class PlatformError(StereorankError):
    """The platform refused a call, or could not be reached after every retry; the message
    says which call and why (never the token)."""


class AnswerLost(PlatformError, Conflict):
    """A call that must never be repeated (the pay call) got no answer: whether it took
    effect is unknown until the platform's own records are read."""


@dataclass(frozen=True)
class StudyDraft:
    """What a platform needs to create our study (Prolific's field names in brackets)."""

    name: str
    internal_name: str  # our marker: publishing twice finds the study by it
    description: str
    entry_url: str  # with the platform's placeholders
    completion_code: str
    screen_out_code: str
    places: int
    reward_cents: int
    minutes: int
    filters: list[dict] = field(default_factory=list)


@dataclass(frozen=True)
class RemoteStudy:
    id: str
    internal_name: str
    status: str
    currency: str = ""


@dataclass(frozen=True)
class RemoteSubmission:
    id: str
    status: str
    participant_id: str  # in memory only
    bonus_cents: tuple[int, ...] = ()

    @property
    def bonus_paid_cents(self) -> int:
        return sum(self.bonus_cents)


@dataclass(frozen=True)
class BonusSetUp:
    id: str
    total_cents: int
    charged_cents: int | None


class CrowdPlatform(Protocol):
    """A crowd platform's side of a study's lifecycle."""

    name: str

    def filters(self) -> list[dict]:
        """The screening filters the platform offers (their ids and choices)."""

    def find_study(self, internal_name: str) -> RemoteStudy | None:
        """Our study on the platform, found by the marker we gave it, if it is there."""

    def create_study(self, draft: StudyDraft) -> RemoteStudy:
        """Create the study (not yet published)."""

    def transition(self, study_id: str, action: str) -> None:
        """Publish, pause or start the study (``PUBLISH``, ``PAUSE``, ``START``)."""

    def study_currency(self, study_id: str) -> str:
        """The study's currency as the platform reads it (e.g. ``GBP``)."""

    def set_screening(self, study_id: str, filters: list[dict]) -> None:
        """Replace the study's screening."""

    def submissions(self, study_id: str) -> list[RemoteSubmission]:
        """Every submission of the study, as the platform reports it now."""

    def submission(self, submission_id: str) -> RemoteSubmission:
        """One submission, as the platform reports it now (its bonuses paid included)."""

    def approve(self, submission_id: str) -> None:
        """Approve the submission (final)."""

    def reject(self, submission_id: str, message: str, category: str) -> None:
        """Reject the submission (final), with the message the participant reads."""

    def set_up_bonuses(self, study_id: str, lines: list[tuple[str, Decimal]]) -> BonusSetUp:
        """Set up one bulk bonus payment (submission id, amount in the study's currency);
        pays nothing."""

    def pay(self, payment_id: str) -> None:
        """Pay a bulk bonus payment: sent once, never retried (``AnswerLost`` when no
        answer came)."""
