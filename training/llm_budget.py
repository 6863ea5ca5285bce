"""The LLM's spending cap per UTC day, held across requests and processes in the database.

``OPENAI_MAX_COST_USD`` (``TRAINING["OPENAI_CLIENT"]["max_cost_usd"]``) is that cap. A
chat client built by ``client_options`` carries a ``DailyLedger``
(``training.ml.chat.SpendLedger``): before each request it reserves the request's worst
case (estimated prompt plus ``max_tokens`` of completion, priced) on the day's
``LLMSpend`` row, locked, and is refused (``ChatBudgetExceeded``, before anything is
sent) when spent + reserved + that worst case would pass the cap; after the answer the
reservation is replaced by what the request cost. Every web request (the optimiser's
rewriter) and every worker (paraphrasing) shares the one row, so the cap holds whatever
the number of processes. A process killed mid-request leaves its reservation counted
(on the safe side) until the day ends. Call it outside a transaction: the row's lock is
held only for the reservation itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from training.ml.chat import ChatBudgetExceeded
from training.models import LLMSpend


def today() -> date:
    return datetime.now(UTC).date()


@dataclass(frozen=True)
class Ticket:
    day: date
    reserved_usd: float


class DailyLedger:
    """``SpendLedger`` on the ``LLMSpend`` row of each UTC day, capped at ``cap_usd``."""

    def __init__(self, cap_usd: float) -> None:
        self.cap_usd = cap_usd

    def reserve(self, worst_usd: float) -> Ticket:
        day = today()
        with transaction.atomic():
            LLMSpend.objects.get_or_create(day=day)
            row = LLMSpend.objects.select_for_update().get(day=day)
            committed = row.spent_usd + row.reserved_usd
            if committed + worst_usd > self.cap_usd:
                raise ChatBudgetExceeded(
                    f"the daily LLM budget ${self.cap_usd:.4f} (OPENAI_MAX_COST_USD) would be "
                    f"exceeded: ${row.spent_usd:.4f} spent today (UTC), "
                    f"${row.reserved_usd:.4f} in flight, the next request may cost up to "
                    f"${worst_usd:.4f}"
                )
            LLMSpend.objects.filter(pk=row.pk).update(
                reserved_usd=F("reserved_usd") + worst_usd,
                requests=F("requests") + 1,
                updated_at=timezone.now(),
            )
        return Ticket(day, worst_usd)

    def settle(self, ticket: Ticket, cost_usd: float) -> None:
        LLMSpend.objects.filter(day=ticket.day).update(
            reserved_usd=F("reserved_usd") - ticket.reserved_usd,
            spent_usd=F("spent_usd") + cost_usd,
            updated_at=timezone.now(),
        )


def ledger() -> DailyLedger | None:
    """The daily ledger of ``OPENAI_MAX_COST_USD``; None when no cap is set."""
    cap = settings.TRAINING["OPENAI_CLIENT"].get("max_cost_usd")
    return None if cap is None else DailyLedger(cap)


def client_options() -> dict:
    """The chat client's options from ``TRAINING["OPENAI_CLIENT"]``, with the daily ledger:
    what every LLM client the project builds is given."""
    return {**settings.TRAINING["OPENAI_CLIENT"], "ledger": ledger()}
