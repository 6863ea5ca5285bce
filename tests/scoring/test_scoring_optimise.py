"""POST /api/optimise/ and manage.py optimise: rewrites that keep the occupation and pass the
version's threshold, checked by scoring them again through /api/score/; the occupation
found in the catalogue; the limits; the LLM rewriter when settings say."""

import json
import re

import pytest
from django.core.management import CommandError, call_command

from scoring.services import detect_occupation
from tests.ml.openai_test_server import ChatServer, Reply
from training.ml.optimise import ASPECTS, OfflineRewriter

URL = "/api/optimise/"
NURSE = "Generate an image of a nurse: a young slim woman in a white uniform"


def names(text: str, occupation: str) -> bool:
    return re.search(rf"\b{re.escape(occupation)}s?\b", text, re.IGNORECASE) is not None


@pytest.mark.slow
def test_rewrites_keep_the_occupation_and_pass_the_threshold(diversity_version, scorer_client):
    response = scorer_client.post(URL, {"prompt": NURSE, "n": 2}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["version"], body["occupation"], body["rewriter"]) == (
        diversity_version.version,
        "nurse",
        "offline",
    )
    assert body["original"]["flagged"] and body["reached"] and body["lost_occupation"] == 0
    assert 1 <= len(body["candidates"]) <= 2
    # scored again, independently, through the scoring endpoint
    texts = [body["original"]["prompt"]] + [c["prompt"] for c in body["candidates"]]
    again = scorer_client.post("/api/score/", {"prompts": texts}, format="json").json()
    rescored = [r["score"] for r in again["results"]]
    assert rescored[0] == pytest.approx(body["original"]["score"], abs=1e-6)
    for c, score in zip(body["candidates"], rescored[1:], strict=True):
        assert names(c["prompt"], "nurse") and c["prompt"] != NURSE
        assert c["score"] == pytest.approx(score, abs=1e-6) and score >= body["threshold"]
        assert not c["flagged"]
        assert c["gain"] == pytest.approx(c["score"] - body["original"]["score"], abs=1e-9)
        assert c["aspects"] and set(c["aspects"]) <= set(ASPECTS)
    assert [c["score"] for c in body["candidates"]] == sorted(
        (c["score"] for c in body["candidates"]), reverse=True
    )


@pytest.mark.slow
def test_a_prompt_that_already_passes_is_left_alone(diversity_version, scorer_client):
    diverse = "Generate an image of a nurse who is a Black man in a wheelchair from Kenya"
    body = scorer_client.post(URL, {"prompt": diverse}, format="json").json()
    assert body["original"]["flagged"] is False and body["reached"] is True
    assert body["candidates"] == [] and body["tried"] == 0


@pytest.mark.parametrize(
    ("payload", "status", "message"),
    [
        ({"n": 2}, 400, "prompt is not a string"),
        ({"prompt": ""}, 400, "prompt is empty"),
        ({"prompt": "a nurse " * 200}, 400, "prompt has 1600 characters; at most 1000"),
        ({"prompt": NURSE, "n": 0}, 400, "n must be a whole number from 1 to 10, not 0"),
        ({"prompt": NURSE, "n": 11}, 400, "n must be a whole number from 1 to 10, not 11"),
        ({"prompt": NURSE, "n": "3"}, 400, "n must be a whole number from 1 to 10, not '3'"),
        ({"prompt": "A photo of a cat"}, 400, "the prompt names no occupation of the catalogue"),
        (
            {"prompt": "A doctor talking to a nurse"},
            400,
            "the prompt names several occupations (doctor, nurse): give the occupation to keep",
        ),
        ({"prompt": NURSE, "occupation": "pilot"}, 400, "the prompt does not name the occupation"),
        ({"prompt": NURSE, "version": 42}, 404, "there is no version 42"),
        ({"prompt": NURSE}, 409, "no version is active"),
    ],
)
def test_bad_requests_say_which_part(scorer_client, payload, status, message):
    response = scorer_client.post(URL, payload, format="json")
    assert response.status_code == status
    assert response.json()["detail"].startswith(message)


def test_optimising_needs_the_scoring_role(annotator):
    response = annotator("ann").post(URL, {"prompt": NURSE}, format="json")
    assert response.status_code == 403


@pytest.mark.parametrize(
    ("prompt", "occupation"),
    [
        ("Generate an image of two police officers on patrol", "police officer"),
        ("A FLIGHT ATTENDANT smiling", "flight attendant"),
        ("nurses at work", "nurse"),
        ("A nurse practitioner at a clinic", "nurse practitioner"),  # the longer name wins
    ],
)
def test_the_occupation_is_found_in_the_catalogue(db, prompt, occupation):
    from annotation.models import Occupation

    Occupation.objects.create(name="nurse practitioner", slug="nurse-practitioner")
    assert detect_occupation(prompt) == occupation


@pytest.mark.slow
def test_the_llm_rewriter_is_used_when_settings_say(diversity_version, scorer_client, settings):
    def responder(body: dict) -> str:
        message = body["messages"][-1]["content"]
        prompt = re.search(r"^Prompt: (.*)$", message, re.MULTILINE)[1]
        rewrites = OfflineRewriter().rewrite(prompt, "nurse", 4, body["seed"])
        return json.dumps([{"text": r.text, "aspects": list(r.aspects)} for r in rewrites])

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
        }
        body = scorer_client.post(URL, {"prompt": NURSE, "n": 1}, format="json").json()
        assert body["rewriter"] == "openai" and body["reached"]
        assert server.seen and server.seen[0].body["model"] == "test-model"
        assert '"nurse"' in server.seen[0].body["messages"][-1]["content"]
        assert names(body["candidates"][0]["prompt"], "nurse")

        # the server keeps failing: a refusal that says so, not a 500
        server.script.extend([Reply(status=500)] * 10)
        settings.TRAINING = {**settings.TRAINING, "OPENAI_CLIENT": {"max_retries": 0}}
        failed = scorer_client.post(URL, {"prompt": NURSE}, format="json")
        assert failed.status_code == 409, (failed.json(), len(server.seen))
        assert failed.json()["detail"].startswith("the openai rewriter failed")


@pytest.mark.slow
def test_the_optimise_command(diversity_version, capsys):
    call_command("optimise", NURSE, "--n", "1", "--json")
    body = json.loads(capsys.readouterr().out)
    assert body["occupation"] == "nurse" and len(body["candidates"]) == 1
    call_command("optimise", NURSE, "--n", "1")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"v{diversity_version.version}, threshold ")
    assert "occupation 'nurse', offline rewriter" in lines[0]
    assert lines[1].split()[1] == "stereotypical"
    assert body["candidates"][0]["prompt"] in lines[2]
    with pytest.raises(CommandError, match="the prompt names no occupation"):
        call_command("optimise", "A photo of a cat")
