"""POST /api/score/: the contract, the limits and their messages, the role, the throttle,
the schema; and manage.py score / grant_scoring. SQLite; MiniLM where a model is needed."""

import json

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient
from rest_framework.throttling import ScopedRateThrottle

from scoring.scorer import Scorer
from tests.schema_helpers import served_schema
from tests.scoring.helpers import PROMPTS, scoring_user, token_client
from training import services

URL = "/api/score/"


@pytest.mark.slow
def test_scores_flags_and_the_threshold_of_the_version_used(make_version, scorer_client):
    probe = Scorer().get(make_version(1).version).score(PROMPTS)
    middle = float(np.median(probe))
    active = make_version(1, threshold=middle, basis="KDE crossing of 2 vs 2 prompts")
    services.promote(active, actor="test")

    response = scorer_client.post(URL, {"prompts": PROMPTS}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["version"], body["threshold"], body["threshold_basis"]) == (
        active.version,
        middle,
        "KDE crossing of 2 vs 2 prompts",
    )
    assert [r["prompt"] for r in body["results"]] == PROMPTS
    np.testing.assert_allclose([r["score"] for r in body["results"]], probe, atol=1e-6)
    assert [r["flagged"] for r in body["results"]] == [bool(s < middle) for s in probe]
    assert 0 < sum(r["flagged"] for r in body["results"]) < len(PROMPTS)

    # another version by number: its own threshold and scores
    other = scorer_client.post(URL, {"prompts": PROMPTS[:1], "version": 1}, format="json").json()
    assert (other["version"], other["threshold"]) == (1, 0.0)
    assert other["results"][0]["score"] == pytest.approx(probe[0], abs=1e-6)


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ([PROMPTS], "the body must be a JSON object"),
        ({}, "prompts must be a list of strings"),
        ({"prompts": "a nurse"}, "prompts must be a list of strings"),
        ({"prompts": []}, "prompts is empty: give at least one prompt"),
        ({"prompts": ["a"] * 257}, "too many prompts: 257 given, at most 256 are allowed"),
        ({"prompts": ["a nurse", 3]}, "prompts[1] is not a string"),
        ({"prompts": ["a nurse", None]}, "prompts[1] is not a string"),
        ({"prompts": ["a nurse", "  "]}, "prompts[1] is empty"),
        ({"prompts": ["n" * 1001]}, "prompts[0] has 1001 characters; at most 1000 are allowed"),
        ({"prompts": ["a nurse"], "version": "2"}, "version must be a positive whole number"),
        ({"prompts": ["a nurse"], "version": 0}, "version must be a positive whole number"),
    ],
)
def test_bad_requests_are_400s_that_say_which_part(scorer_client, payload, message):
    response = scorer_client.post(URL, payload, format="json")
    assert response.status_code == 400
    assert response.json()["detail"].startswith(message)


def test_the_limits_come_from_settings(scorer_client, settings):
    settings.STEREORANK = {
        **settings.STEREORANK,
        "SCORING": {**settings.STEREORANK["SCORING"], "MAX_PROMPTS": 2, "MAX_CHARS": 5},
    }
    three = scorer_client.post(URL, {"prompts": ["a", "b", "c"]}, format="json")
    assert three.json()["detail"] == "too many prompts: 3 given, at most 2 are allowed"
    long = scorer_client.post(URL, {"prompts": ["abcdef"]}, format="json")
    assert long.json()["detail"] == "prompts[0] has 6 characters; at most 5 are allowed"


def test_unknown_version_is_404_and_nothing_active_is_409(scorer_client):
    missing = scorer_client.post(URL, {"prompts": ["a nurse"], "version": 99}, format="json")
    assert (missing.status_code, missing.json()["detail"]) == (404, "there is no version 99")
    idle = scorer_client.post(URL, {"prompts": ["a nurse"]}, format="json")
    assert idle.status_code == 409
    assert idle.json()["detail"] == "no version is active: promote one in the registry"


def test_only_the_scoring_role_may_score(db, annotator):
    anonymous = APIClient().post(URL, {"prompts": ["a nurse"]}, format="json")
    assert anonymous.status_code == 403  # session auth first: DRF answers 403, not 401
    assert anonymous.json()["detail"] == "Authentication credentials were not provided."
    annotator_client = annotator("ann")  # a consenting annotator: no scoring role
    refused = annotator_client.post(URL, {"prompts": ["a nurse"]}, format="json")
    assert refused.status_code == 403 and "scoring role" in refused.json()["detail"]
    staff = get_user_model().objects.create_user("staff", password="pw-123456", is_staff=True)
    assert token_client(staff).post(URL, {"prompts": []}, format="json").status_code == 403

    user = scoring_user("later", grant=False)
    client = token_client(user)
    assert client.post(URL, {"prompts": []}, format="json").status_code == 403
    call_command("grant_scoring", "later")
    assert client.post(URL, {"prompts": []}, format="json").status_code == 400  # past the gate
    call_command("grant_scoring", "later", "--revoke")
    assert client.post(URL, {"prompts": []}, format="json").status_code == 403


def test_grant_scoring_names_an_unknown_user(db):
    with pytest.raises(CommandError, match="there is no user 'nobody'"):
        call_command("grant_scoring", "nobody")


def test_scoring_is_throttled_per_user(scorer_client, settings, monkeypatch, request):
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": f"throttles-{request.node.name}",
        }
    }
    monkeypatch.setattr(ScopedRateThrottle, "THROTTLE_RATES", {"scoring": "2/min"})
    statuses = [
        scorer_client.post(URL, {"prompts": []}, format="json").status_code for _ in range(3)
    ]
    assert statuses == [400, 400, 429]
    # another scorer has a budget of their own
    other = token_client(scoring_user("other"))
    assert other.post(URL, {"prompts": []}, format="json").status_code == 400


def test_the_schema_documents_score_and_optimise(db):
    schema = served_schema()
    score = schema["paths"]["/api/score/"]["post"]
    assert score["operationId"] == "score_prompts"
    request = schema["components"]["schemas"]["ScoreRequest"]
    assert set(request["properties"]) == {"prompts", "version", "group"}
    assert request["required"] == ["prompts"]
    response = schema["components"]["schemas"]["ScoreResponse"]
    assert set(response["properties"]) == {
        "version",
        "threshold",
        "threshold_basis",
        "encoder",
        "results",
        "scale",  # one scale per version, for the checker's bars (issue 37)
        "group",  # whose head answered (issue 41)
        "disagreement_threshold",
    }
    scored = schema["components"]["schemas"]["ScoredWithSpread"]["properties"]
    assert {"disagreement", "contested"} <= set(scored)
    served = schema["components"]["schemas"]["ServedEncoder"]["properties"]
    assert set(served) == {"backend", "quantization", "gate", "fallback"}
    assert "/api/optimise/" in schema["paths"]
    assert {"prompt", "n", "occupation", "version"} == set(
        schema["components"]["schemas"]["OptimiseRequest"]["properties"]
    )


@pytest.mark.slow
def test_the_score_command_prints_a_table_or_the_apis_json(make_version, capsys):
    checkpoint = make_version(2, threshold=0.01, basis="seed default 0.12: a test")
    services.promote(checkpoint, actor="test")
    expected = Scorer().get().score(PROMPTS[:2])
    call_command("score", *PROMPTS[:2], "--json")
    body = json.loads(capsys.readouterr().out)
    assert body["version"] == checkpoint.version and body["threshold"] == 0.01
    np.testing.assert_allclose([r["score"] for r in body["results"]], expected, atol=1e-6)
    call_command("score", PROMPTS[0], "--version", str(checkpoint.version))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"v{checkpoint.version}, threshold 0.0100 (seed default 0.12: a test)"
    flag = "stereotypical" if expected[0] < 0.01 else "ok"
    assert lines[1].split() == [f"{expected[0]:.4f}", flag, *PROMPTS[0].split()]


def test_the_score_command_refuses_in_one_line(db):
    with pytest.raises(CommandError, match="no version is active"):
        call_command("score", "a nurse")
    with pytest.raises(CommandError, match="has 1001 characters"):
        call_command("score", "n" * 1001)
