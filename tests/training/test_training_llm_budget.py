"""The LLM's spending cap per day (issue 31, part 8): ``OPENAI_MAX_COST_USD`` holds across
requests and processes, kept in the database (``training.llm_budget``). Each request to
the optimiser builds a fresh rewriter (``scoring.services.make_rewriter``), so the cap of
one client alone would reset on every request; the day's ledger row does not. Against
the local chat-completions stand-in (``tests/ml/openai_test_server.py``)."""

import json
import re

import pytest

from scoring.services import make_rewriter
from tests.ml.openai_test_server import ChatServer
from training.llm_budget import DailyLedger, today
from training.ml.chat import ChatBudgetExceeded
from training.ml.optimise import OfflineRewriter, RewriteBudgetExceeded
from training.models import LLMSpend

NURSE = "Generate an image of a nurse: a young slim woman in a white uniform"
# USD per 1,000 tokens: one rewrite request costs $0.26 and may cost up to $0.60, so a
# cap of $0.80 lets one request through, not two.
PRICES = {"price_prompt_per_1k": 1.0, "price_completion_per_1k": 2.0}


def responder(body: dict) -> str:
    message = body["messages"][-1]["content"]
    prompt = re.search(r"^Prompt: (.*)$", message, re.MULTILINE)[1]
    rewrites = OfflineRewriter().rewrite(prompt, "nurse", 1, body["seed"])
    return json.dumps([{"text": r.text, "aspects": list(r.aspects)} for r in rewrites])


@pytest.fixture
def llm(settings, db):
    """The optimiser's rewriter set to the LLM, capped at $0.80 a day."""
    with ChatServer(api_key="sk-test", responder=responder) as server:
        settings.STEREORANK = {
            **settings.STEREORANK,
            "SCORING": {**settings.STEREORANK["SCORING"], "REWRITER": "openai"},
        }
        settings.TRAINING = {
            **settings.TRAINING,
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_MODEL": "test-model",
            "OPENAI_CLIENT": {"max_retries": 0, "max_cost_usd": 0.8, **PRICES},
        }
        yield server


def one_request(seed: int) -> list:
    """What one optimiser request does with the LLM: a new rewriter, one rewrite."""
    rewriter = make_rewriter()
    try:
        return rewriter.rewrite(NURSE, "nurse", 1, seed)
    finally:
        rewriter.close()


def test_the_daily_cap_holds_across_two_requests(llm):
    assert one_request(seed=0)
    (day,) = LLMSpend.objects.all()
    assert day.day == today() and day.requests == 1 and day.reserved_usd == 0
    assert 0.2 < day.spent_usd < 0.4
    # A second request, with a client of its own, fits its own $0.80 but not the day's.
    with pytest.raises(RewriteBudgetExceeded, match=r"daily LLM budget \$0\.8000") as refused:
        one_request(seed=1)
    assert f"${day.spent_usd:.4f} spent today" in str(refused.value)
    assert len(llm.seen) == 1, "the refused request never reached the server"
    day.refresh_from_db()
    assert day.requests == 1 and day.reserved_usd == 0


def test_requests_in_flight_count_against_the_cap(db):
    # Two processes, each with a ledger of its own, share the one row of the day.
    first, second = DailyLedger(1.0), DailyLedger(1.0)
    ticket = first.reserve(0.6)
    with pytest.raises(ChatBudgetExceeded, match=r"\$0\.6000 in flight"):
        second.reserve(0.6)
    first.settle(ticket, 0.1)
    second.settle(second.reserve(0.6), 0.2)
    day = LLMSpend.objects.get(day=today())
    assert (round(day.spent_usd, 6), day.reserved_usd, day.requests) == (0.3, 0, 2)


def test_no_cap_no_ledger(llm, settings):
    settings.TRAINING = {**settings.TRAINING, "OPENAI_CLIENT": {"max_retries": 0, **PRICES}}
    assert one_request(seed=0) and one_request(seed=1)
    assert not LLMSpend.objects.exists()
