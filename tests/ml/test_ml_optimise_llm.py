"""The DJ-PO prompt optimiser's LLM rewriter, against a local chat-completions server.

The rewriter talks HTTP to ``openai_test_server.ChatServer``, whose responder
reads the filled-in default template and answers, as JSON, the offline
rewriter's rewrites of the prompt it finds there.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from openai_test_server import ChatServer, Reply

from training.ml.lexicon import attribute_terms
from training.ml.optimise import (
    ASPECTS,
    DEFAULT_TEMPLATE,
    OfflineRewriter,
    Rewrite,
    RewriteBudgetExceeded,
    RewriteError,
    make_rewriter,
    optimise,
)
from training.ml.optimise.llm import check_template, parse_rewrites


def names(text: str, occupation: str) -> bool:
    """The occupation, or it plus "s", as whole words."""
    return re.search(rf"\b{re.escape(occupation)}s?\b", text, re.IGNORECASE) is not None


def count_aspects(texts: list[str]) -> np.ndarray:
    """A stand-in reward: how many of the seven aspects the text mentions."""
    return np.array([len({a for a, _ in attribute_terms(t)}) for t in texts], dtype=float)


def offline_responder(body: dict) -> str:
    """A chat model stand-in: reads the default template and answers the offline rewrites."""
    message = body["messages"][-1]["content"]
    prompt = re.search(r"^Prompt: (.*)$", message, re.MULTILINE)[1]
    occupation = re.search(r'name the occupation "([^"]+)"', message)[1]
    n = int(re.search(r"Write (\d+) different", message)[1])
    loose = {a: a.split("/")[0].title() for a in ASPECTS}  # "Religion", "Race", ...
    rewrites = OfflineRewriter().rewrite(prompt, occupation, n, body["seed"])
    items = [{"text": r.text, "aspects": [loose[a] for a in r.aspects]} for r in rewrites]
    return "```json\n" + json.dumps({"rewrites": items}) + "\n```"


@pytest.fixture
def server():
    with ChatServer(api_key="sk-test", responder=offline_responder) as s:
        yield s


def llm_for(server: ChatServer, **options):
    options = {"api_key": "sk-test", "model": "test-model", "backoff_s": 0.01, **options}
    return make_rewriter("openai", base_url=server.base_url, **options)


def test_llm_sends_the_filled_template_and_reads_the_rewrites(server):
    rewriter = llm_for(server)
    got = rewriter.rewrite("Generate an image of a nurse", "nurse", 4, seed=7)
    expected = OfflineRewriter().rewrite("Generate an image of a nurse", "nurse", 4, 7)
    assert [(r.text, r.aspects) for r in got] == [(r.text, r.aspects) for r in expected]
    (seen,) = server.seen
    assert seen.body["seed"] == 7 and seen.body["model"] == "test-model"
    assert seen.body["messages"] == [
        {
            "role": "user",
            "content": DEFAULT_TEMPLATE.format(
                prompt="Generate an image of a nurse",
                occupation="nurse",
                n=4,
                aspects=", ".join(ASPECTS),
            ),
        }
    ]
    assert "body type" in seen.body["messages"][0]["content"]
    assert rewriter.usage["requests"] == 1 and rewriter.usage["completion_tokens"] > 0


def test_optimise_with_the_llm_rewriter(server):
    rewriter = llm_for(server)
    result = optimise("A photo of a plumber", "plumber", count_aspects, 2.0, rewriter, n=2)
    assert result.reached and len(result.candidates) == 2
    assert all(names(c.text, "plumber") and c.score >= 2 for c in result.candidates)
    assert rewriter.usage["requests"] == result.rounds == len(server.seen)


def test_a_custom_template_is_used_as_written(server):
    template = 'Rewrite for {occupation} ({n}), JSON {{"text": ...}}:\nPrompt: {prompt}'
    server.script.append(Reply(content='[{"text": "A nurse in a wheelchair", "aspects": []}]'))
    rewriter = llm_for(server, template=template)
    assert rewriter.rewrite("A nurse", "nurse", 2, seed=0) == [
        Rewrite("A nurse in a wheelchair", ())
    ]
    content = server.seen[0].body["messages"][0]["content"]
    assert content == 'Rewrite for nurse (2), JSON {"text": ...}:\nPrompt: A nurse'


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("Sure! Here are three rewrites of your prompt.", "the answer is not JSON"),
        ('{"prompts": ["a nurse"]}', "expected a list of"),
        ("[]", "holds no rewrite"),
        ('["A nurse who is blind"]', "rewrite 1 is not an object"),
        ('[{"text": "A blind nurse"}, {"aspects": ["age"]}]', "rewrite 2 has no text"),
        ('[{"text": "A tall nurse", "aspects": ["height"]}]', "unknown aspect 'height'"),
        ('[{"text": "A tall nurse", "aspects": {"body": 1}}]', "aspects must be a list"),
    ],
)
def test_a_malformed_answer_is_a_clear_error(server, content, message):
    server.script.append(Reply(content=content))
    with pytest.raises(
        RewriteError, match=f"failed after 1 attempts; last: malformed answer: .*{message}"
    ):
        llm_for(server, max_retries=0).rewrite("A nurse", "nurse", 3, seed=0)


def test_a_malformed_answer_is_asked_again(server):
    server.script.append(Reply(content="not json"))
    got = llm_for(server, max_retries=1).rewrite("A nurse", "nurse", 3, seed=0)
    assert len(got) == 3 and len(server.seen) == 2


def test_parse_rewrites_reads_loose_aspect_names_and_shapes():
    content = (
        'Here: [{"text": "An older  nurse", "aspects": "Age"}, '
        '{"text": "A Deaf nurse from Peru", "aspects": ["nationality", "Disability", "RELIGION"]}]'
    )
    assert parse_rewrites(content) == [
        Rewrite("An older nurse", ("age",)),
        Rewrite("A Deaf nurse from Peru", ("religion/belief", "nationality", "ability/disability")),
    ]


def test_template_placeholders_are_checked():
    assert check_template(DEFAULT_TEMPLATE) == DEFAULT_TEMPLATE
    with pytest.raises(ValueError, match=r"unknown placeholder\(s\).*'person'"):
        check_template("Rewrite {prompt} about {person}")
    with pytest.raises(ValueError, match="unknown placeholder.*''"):
        check_template("Rewrite {}")
    with pytest.raises(ValueError, match=r"must contain the \{prompt\} placeholder"):
        check_template("Rewrite the prompt for {occupation}")
    with pytest.raises(ValueError, match="unknown placeholder.*'\"text\"'.*doubled"):
        check_template('Rewrite {prompt} as {"text": ...}')
    with pytest.raises(ValueError, match="malformed.*doubled"):
        check_template("Rewrite {prompt")
    with pytest.raises(ValueError, match="malformed.*Single '}'"):
        check_template("Rewrite } {prompt}")
    with pytest.raises(ValueError, match="non-empty"):
        make_rewriter("openai", template="  ")


def test_llm_errors_from_the_server_are_rewrite_errors(server):
    with pytest.raises(RewriteError, match="HTTP 401: Incorrect API key provided"):
        llm_for(server, api_key="sk-wrong").rewrite("A nurse", "nurse", 3, seed=0)
    prices = {"price_prompt_per_1k": 1.0, "price_completion_per_1k": 2.0}
    tiny = llm_for(server, max_cost_usd=0.0001, **prices)
    with pytest.raises(RewriteBudgetExceeded, match=r"cost budget \$0\.0001 would be exceeded"):
        tiny.rewrite("A nurse", "nurse", 3, seed=0)
    assert tiny.usage["requests"] == 0 and len(server.seen) == 1
