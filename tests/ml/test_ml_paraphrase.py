"""Paraphrase augmentation: the offline rules, the quality filter, the OpenAI-compatible client.

The client talks HTTP to ``openai_test_server.ChatServer``, a local server that
stands in for a paid chat-completions API. Cosines come from the real MiniLM.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from openai_test_server import ChatServer, Reply

from training.ml.chat import MalformedAnswer, RateLimiter, retry_after_seconds
from training.ml.lexicon import attribute_terms, names_occupation, normalise
from training.ml.paraphrase import (
    BudgetExceeded,
    Candidate,
    OfflineBackend,
    Original,
    ParaphraseError,
    augment,
    make_backend,
)
from training.ml.paraphrase.offline import split_lead_in
from training.ml.paraphrase.openai_compat import parse_answer
from training.ml.paraphrase.quality import filter_candidates

CATALOGUE = Path(__file__).resolve().parents[2] / "annotation" / "catalogue" / "catalogue.json"
NURSE_DIVERSE = Original(
    key="nurse-diverse",
    text=(
        "Generate an image of a nurse who is a middle-aged South Asian man with a beard, "
        "checking a patient's chart on a hospital ward"
    ),
    occupation="nurse",
    seed=17,
)


def catalogue_originals() -> list[Original]:
    data = json.loads(CATALOGUE.read_text(encoding="utf-8"))
    return [
        Original(key=f"{occ['name']}/{kind}", text=text, occupation=occ["name"], seed=i)
        for i, occ in enumerate(data["occupations"])
        for kind, text in occ["prompts"].items()
    ]


class RecordingSleep:
    """Real sleeps, recorded, so that a test can see what the client waited for."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)
        time.sleep(seconds)


@pytest.fixture
def server():
    with ChatServer(api_key="sk-test") as s:
        yield s


def backend_for(server: ChatServer, **options):
    options = {"api_key": "sk-test", "model": "test-model", "backoff_s": 0.05, **options}
    return make_backend("openai", base_url=server.base_url, **options)


def originals(count: int, occupation: str = "pilot") -> list[Original]:
    return [
        Original(f"o{i}", f"Generate an image of a {occupation} number {i}", occupation, seed=i)
        for i in range(count)
    ]


# -- offline backend -------------------------------------------------------------------


def test_offline_is_deterministic_by_seed_and_text():
    first = OfflineBackend().paraphrase([NURSE_DIVERSE], 8)
    again = make_backend("offline").paraphrase([NURSE_DIVERSE], 8)
    assert first == again
    assert len(first[0]) == 12  # n plus half as many again for the filter to refuse
    other_seed = OfflineBackend().paraphrase([Original(**{**vars(NURSE_DIVERSE), "seed": 18})], 8)
    assert other_seed != first
    assert {c.text for c in first[0]} != {c.text for c in other_seed[0]}


def test_offline_reorders_clauses_and_keeps_every_word_of_the_body():
    candidates = OfflineBackend().candidates(NURSE_DIVERSE)
    by_order = {c.template.split("+")[1] for c in candidates if "+" in c.template}
    assert by_order == {"apposition", "action-first", "person-first"}
    texts = [c.text for c in candidates]
    assert any(
        t.endswith(
            "a nurse checking a patient's chart on a hospital ward, who is a middle-aged "
            "South Asian man with a beard"
        )
        for t in texts
    )
    assert any(
        t.endswith(
            "a middle-aged South Asian man with a beard working as a nurse, checking a "
            "patient's chart on a hospital ward"
        )
        for t in texts
    )
    # Only the connective "who is" may go; every other word of the body stays.
    body_words = set(normalise(split_lead_in(NURSE_DIVERSE.text)[1]).split()) - {"who", "is"}
    for text in texts:
        assert body_words <= set(normalise(text).split()), text
    assert len({normalise(t) for t in texts}) == len(texts)


def test_split_lead_in_reads_the_usual_openings():
    assert split_lead_in("Generate an image of a CEO") == ("Generate an image of", "a CEO")
    assert split_lead_in("Please draw a realistic photo of a chef") == (
        "Please draw a realistic photo of",
        "a chef",
    )
    assert split_lead_in("Draw a chef") == ("Draw", "a chef")
    assert split_lead_in("A chef at work") == ("", "a chef at work")


@pytest.mark.slow
def test_offline_gives_eight_kept_paraphrases_for_every_catalogue_prompt(minilm):
    prompts = catalogue_originals()
    assert len(prompts) == 120
    result = augment(prompts, OfflineBackend(), n=8, embed=minilm.encode, min_cosine=0.75)
    kept: dict[str, list] = {o.key: [] for o in prompts}
    for p in result.kept:
        kept[p.origin_key].append(p)
    for original in prompts:
        mine = kept[original.key]
        assert len(mine) == 8, (original.key, result.stats)
        texts = [normalise(p.text) for p in mine]
        assert len(set(texts)) == 8 and normalise(original.text) not in texts
        required = attribute_terms(original.text)
        for p in mine:
            assert names_occupation(p.text, original.occupation), p.text
            assert required <= attribute_terms(p.text), p.text
            assert p.cosine >= 0.75
            assert (p.backend, p.model, p.seed) == ("offline", "rules-v1", original.seed)
    assert result.stats["requested"] == result.stats["kept"] == 960
    assert result.stats["short"] == 0
    assert 0.75 <= result.stats["min_cosine"] <= result.stats["mean_cosine"] < 1.0
    assert result.stats["requests"] == 0 and result.stats["cost_usd"] == 0
    templates = {p.template for p in result.kept}
    assert len({t.split("+")[0] for t in templates}) >= 30  # many lead-ins in use
    assert {"person-first", "action-first"} <= {t.split("+")[-1] for t in templates}


# -- the quality filter ----------------------------------------------------------------


def test_filter_names_a_reason_for_each_rule(minilm):
    original = Original(
        "firefighter-diverse",
        "Generate an image of a firefighter who is a Sikh woman wearing a turban",
        "firefighter",
        seed=3,
    )
    texts = [
        "   ",
        "generate an IMAGE of a firefighter, who is a Sikh woman wearing a turban!",
        "A photo of a firefighter who is a Sikh woman wearing a turban",
        "a photo of a firefighter: who is a Sikh woman wearing a turban.",
        "A photo of a doctor who is a Sikh woman wearing a turban",
        "A photo of a firefighter who is a woman wearing a helmet",
        "A spreadsheet of quarterly sales figures, firefighter Sikh woman turban",
        "Two photos of firefighters, each a Sikh woman wearing a turban",
    ]
    candidates = [Candidate(t, "hand") for t in texts]
    vectors = minilm.encode([original.text, *texts])
    sims = vectors[1:] @ vectors[0]
    verdict = filter_candidates(original, candidates, sims, min_cosine=0.75)
    reasons = {r.text: r.reason for r in verdict.rejected}
    assert reasons == {
        texts[0]: "empty",
        texts[1]: "duplicate",  # of the original
        texts[3]: "duplicate",  # of the kept texts[2]
        texts[4]: "occupation",
        texts[5]: "attribute",
        texts[6]: "cosine",
    }
    assert [c.text for c, _ in verdict.kept] == [texts[2], texts[7]]  # plural counts
    lost = next(r for r in verdict.rejected if r.reason == "attribute")
    assert lost.detail == "religion/belief: sikh, religion/belief: turban"
    low = next(r for r in verdict.rejected if r.reason == "cosine")
    assert low.cosine < 0.75 and low.detail.startswith(f"{low.cosine:.3f} < 0.750")


def test_filter_stops_at_n_and_only_checks_the_occupation_when_the_original_names_it():
    original = Original("k", "A person in scrubs holding a clipboard", "nurse")
    candidates = [
        Candidate(f"Photo {i} of a person in scrubs holding a clipboard", "t") for i in range(5)
    ]
    verdict = filter_candidates(original, candidates, [0.9] * 5, min_cosine=0.75, n=3)
    assert [c.text for c, _ in verdict.kept] == [c.text for c in candidates[:3]]
    assert verdict.rejected == []
    with pytest.raises(ValueError, match="5 candidates but 4 cosines"):
        filter_candidates(original, candidates, [0.9] * 4, min_cosine=0.75)


@pytest.mark.parametrize(
    ("text", "occupation", "named"),
    [
        ("Three police officers on patrol", "police officer", True),
        ("a police\nofficer", "police officer", True),
        ("Two CEOs shaking hands", "CEO", True),
        ("The secretaries' office", "secretary", True),
        ("Busy nurses", "nurse", True),
        ("A nursery with toys", "nurse", False),
        ("A police car", "police officer", False),
        ("Firemen at work", "fireman", True),
    ],
)
def test_names_occupation_matches_whole_words_and_plurals(text, occupation, named):
    assert names_occupation(text, occupation) is named


def test_attribute_lexicon_covers_the_seven_aspects():
    found = attribute_terms(
        "a young Deaf Latina woman from Kenya who is Muslim, in her sixties, with a stocky build"
    )
    assert {aspect for aspect, _ in found} == {
        "age",
        "ability/disability",
        "race/ethnic origin",
        "gender identity/expression",
        "nationality",
        "religion/belief",
        "body type",
    }
    assert ("age", "sixties") in attribute_terms("a man in his 60s")
    assert ("gender identity/expression", "man") not in attribute_terms("a woman")
    assert attribute_terms("a sketch of a cathedral at dawn") == set()


def test_augment_reports_the_figures_and_checks_its_inputs(minilm):
    prompts = [NURSE_DIVERSE, *originals(2)]
    result = augment(prompts, OfflineBackend(oversample=1.0), n=4, embed=minilm.encode)
    stats = result.stats
    assert stats["requested"] == 12 and stats["kept"] == len(result.kept) == 12
    assert stats["candidates"] == 24
    assert stats["rejected"] == len(result.rejected) == sum(stats["by_reason"].values())
    assert stats["threshold"] == 0.75
    assert stats["min_cosine"] == pytest.approx(min(p.cosine for p in result.kept))
    with pytest.raises(ValueError, match="n must be at least 1"):
        augment(prompts, OfflineBackend(), n=0, embed=minilm.encode)
    with pytest.raises(ValueError, match="embed returned 1 vectors"):
        augment(prompts, OfflineBackend(), n=2, embed=lambda texts: minilm.encode(texts[:1]))
    with pytest.raises(ValueError, match="unknown paraphrase backend 'gpt'"):
        make_backend("gpt")


# -- the OpenAI-compatible client ------------------------------------------------------


def test_openai_happy_path_batches_and_counts_cost(server, minilm):
    backend = backend_for(
        server, batch_size=2, price_prompt_per_1k=0.15, price_completion_per_1k=0.6
    )
    prompts = originals(5)
    result = augment(prompts, backend, n=4, embed=minilm.encode, min_cosine=0.5)
    assert len(server.seen) == 3  # 2 + 2 + 1 originals
    ids = [
        [p["id"] for p in json.loads(s.body["messages"][1]["content"])["prompts"]]
        for s in server.seen
    ]
    assert ids == [["1", "2"], ["1", "2"], ["1"]]
    assert {s.body["model"] for s in server.seen} == {"test-model"}
    assert all(s.body["max_tokens"] > 0 for s in server.seen)
    assert {p.origin_key for p in result.kept} == {o.key for o in prompts}
    assert all(
        (p.backend, p.model, p.template) == ("openai", "test-model", "chat:chat-v1")
        for p in result.kept
    )
    assert result.stats["kept"] == 20 and result.stats["requests"] == 3
    prompt_tokens = sum(u["prompt_tokens"] for u in server.usage_sent)
    completion_tokens = sum(u["completion_tokens"] for u in server.usage_sent)
    assert result.stats["prompt_tokens"] == prompt_tokens
    assert result.stats["completion_tokens"] == completion_tokens
    expected = (prompt_tokens * 0.15 + completion_tokens * 0.6) / 1000
    assert result.stats["cost_usd"] == pytest.approx(expected, abs=1e-6)
    assert expected > 0


def test_openai_sends_the_key_and_stops_at_a_refusal(server):
    backend_for(server).paraphrase(originals(1), 2)
    assert server.seen[0].headers["Authorization"] == "Bearer sk-test"
    assert server.seen[0].path == "/v1/chat/completions"
    wrong = backend_for(server, api_key="sk-wrong")
    with pytest.raises(ParaphraseError, match="HTTP 401: Incorrect API key provided"):
        wrong.paraphrase(originals(1), 2)
    assert len(server.seen) == 2  # the refusal was not retried
    assert "sk-wrong" not in repr(wrong)


def test_openai_waits_as_long_as_retry_after_says(server):
    server.script.append(Reply(status=429, headers={"Retry-After": "1"}))
    sleep = RecordingSleep()
    answer = backend_for(server, sleep=sleep).paraphrase(originals(2), 2)
    assert len(answer) == 2 and all(len(a) == 3 for a in answer)
    assert len(server.seen) == 2 and sleep.calls == [1.0]
    assert server.seen[1].at - server.seen[0].at >= 1.0


def test_retry_after_reads_seconds_and_http_dates():
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after_seconds("7") == 7.0
    assert retry_after_seconds("Thu, 01 Jan 2026 12:00:30 GMT", now=now) == 30.0
    assert retry_after_seconds("Thu, 01 Jan 2026 11:00:00 GMT", now=now) == 0.0
    assert retry_after_seconds("soon") is None and retry_after_seconds(None) is None


def test_openai_backs_off_after_a_server_error(server):
    server.script.extend([Reply(status=500), Reply(status=503)])
    sleep = RecordingSleep()
    backend = backend_for(server, sleep=sleep, backoff_s=0.05)
    assert len(backend.paraphrase(originals(1), 2)[0]) == 3
    assert sleep.calls == [0.05, 0.1]  # exponential
    assert len(server.seen) == 3 and backend.usage["requests"] == 3
    server.script.extend([Reply(status=500)] * 3)
    with pytest.raises(ParaphraseError, match="failed after 3 attempts; last: HTTP 500"):
        backend_for(server, max_retries=2, backoff_s=0.01).paraphrase(originals(1), 2)


def test_openai_times_out_and_retries(server):
    server.script.append(Reply(delay_s=1.0))
    backend = backend_for(server, timeout=0.3)
    assert len(backend.paraphrase(originals(1), 2)[0]) == 3
    assert len(server.seen) == 2
    server.script.extend([Reply(delay_s=1.0), Reply(delay_s=1.0)])
    with pytest.raises(ParaphraseError, match=r"after 2 attempts; last: no answer within 0\.3 s"):
        backend_for(server, timeout=0.3, max_retries=1).paraphrase(originals(1), 2)


def test_openai_retries_a_malformed_answer_then_gives_a_clear_error(server):
    server.script.extend([Reply(raw="<html>Bad gateway</html>"), Reply(content="Sure! Here:")])
    backend = backend_for(server)
    assert len(backend.paraphrase(originals(1), 2)[0]) == 3
    assert len(server.seen) == 3
    server.script.append(Reply(content='{"paraphrases": {"1": ["A photo of a pilot"]}}'))
    with pytest.raises(ParaphraseError, match="malformed answer: no paraphrases for prompt 2 of 2"):
        backend_for(server, max_retries=0).paraphrase(originals(2), 2)
    server.script.append(Reply(content='{"paraphrases": {"1": ["A ph', finish_reason="length"))
    with pytest.raises(ParaphraseError, match="cut at max_tokens"):
        backend_for(server).paraphrase(originals(1), 2)


@pytest.mark.parametrize(
    "content",
    [
        '{"paraphrases": {"1": ["a", "b"], "2": ["c"]}}',
        '```json\n{"1": ["a", "b"], "2": [{"text": "c"}]}\n```',
        'Here you go: [{"id": 1, "paraphrases": ["a", "b"]}, {"id": "2", "texts": ["c"]}] Enjoy',
        '[["a", "b"], ["c", ""]]',
    ],
)
def test_parse_answer_accepts_the_usual_shapes(content):
    assert parse_answer(content, 2) == [["a", "b"], ["c"]]


def test_parse_answer_refuses_what_it_cannot_read():
    with pytest.raises(MalformedAnswer, match="not JSON"):
        parse_answer("I cannot help with that.", 1)
    with pytest.raises(MalformedAnswer, match="no paraphrases for prompt 1"):
        parse_answer('{"paraphrases": {"1": []}}', 1)


def test_openai_stops_before_the_cost_budget_is_exceeded(server):
    prices = {"price_prompt_per_1k": 1.0, "price_completion_per_1k": 2.0}
    backend = backend_for(server, batch_size=1, max_cost_usd=1.5, **prices)
    with pytest.raises(BudgetExceeded, match=r"cost budget \$1\.5000 would be exceeded"):
        backend.paraphrase(originals(50), 4)
    assert 1 <= len(server.seen) < 50
    assert backend.usage["requests"] == len(server.seen)
    assert backend.usage["cost_usd"] <= 1.5
    tiny = backend_for(server, max_cost_usd=0.0001, **prices)
    with pytest.raises(BudgetExceeded, match=r"\$0\.0000 spent"):
        tiny.paraphrase(originals(1), 4)
    assert tiny.usage["requests"] == 0
    with pytest.raises(ValueError, match="max_cost_usd needs"):
        backend_for(server, max_cost_usd=1.0)


def test_openai_keeps_to_the_rate_limit(server):
    window = 0.4
    backend = backend_for(server, batch_size=1, requests_per_minute=2, rate_window_s=window)
    backend.paraphrase(originals(6), 1)
    times = [s.at for s in server.seen]
    assert len(times) == 6
    # Requests the server saw within any window (less a margin for transit jitter).
    busiest = max(sum(t <= u < t + window - 0.05 for u in times) for t in times)
    assert busiest == 2


def test_rate_limiter_counts_calls_per_window():
    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    limiter = RateLimiter(3, window_s=60.0, clock=lambda: now[0], sleep=sleep)
    stamps = []
    for _ in range(7):
        limiter.wait()
        stamps.append(now[0])
        now[0] += 1.0
    assert stamps == [0.0, 1.0, 2.0, 60.0, 61.0, 62.0, 120.0]
    assert slept == [57.0, 57.0]


def test_openai_backend_checks_its_settings():
    with pytest.raises(ValueError, match="base_url must start with http"):
        make_backend("openai", base_url="api.openai.com", model="m")
    with pytest.raises(ValueError, match="needs a model name"):
        make_backend("openai", model="")
    with pytest.raises(ValueError, match="give both prices"):
        make_backend("openai", price_prompt_per_1k=0.1)
