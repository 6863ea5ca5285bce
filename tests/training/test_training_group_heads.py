"""Group heads end to end: a ``--groups`` run's heads in its checkpoint and on its card, the
penalty recorded and reused, per-group scores and disagreement from ``score`` and
``/api/score/``, and every refusal (a special category, a group unknown or under k, a
version without heads, two steerings at once)."""

import io
import json

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from privacy_claims import says
from rest_framework.test import APIClient
from training_study import FAST, fresh_scorer, make_perspective_study  # noqa: F401

from scoring.scorer import reset_scorer
from tests.scoring.helpers import scoring_user, token_client
from tests.staff import make_staff
from training.errors import RunError
from training.models import DatasetSnapshot, GroupHeadChoice
from training.registry.services import promote
from training.runs.services import execute_run, start_run
from training.selectors import snapshot_rankings
from training.snapshots.services import create_snapshot
from training.snapshots.steering import parse
from training.storage import checkpoint_store, encoders
from training.storage.encoders import load_model

pytestmark = [pytest.mark.slow]
PROMPTS = ["A photo of a nurse", "A photo of a nurse in a wheelchair wearing a hijab"]


@pytest.fixture(autouse=True)
def _fresh_scorer(fresh_scorer):  # noqa: F811
    """Every test here starts with no loaded version (``training_study.fresh_scorer``)."""


@pytest.fixture
def grouped(db, tmp_path, settings):
    """A run with heads on age_band (k = 2: 25-34 has 2 annotators with rankings that
    count, 18-24 the rest of its 10), promoted."""
    make_perspective_study(tmp_path)
    settings.STEREORANK = {**settings.STEREORANK, "GROUP_K": 2}
    snapshot = create_snapshot(include_synthetic=True)
    run = start_run(
        snapshot, hyperparameters=FAST, steering=parse(groups="age_band"), enqueue=False
    )
    assert execute_run(run.pk, "node-a").startswith("done")
    run.refresh_from_db()
    promote(run.checkpoint, actor="test")
    reset_scorer()
    return run


def _score(*args) -> str:
    out = io.StringIO()
    call_command("score", *PROMPTS, *args, stdout=out)
    return out.getvalue()


def test_a_grouped_run_keeps_its_heads_and_its_snapshot_the_penalty(grouped):
    checkpoint = grouped.checkpoint
    folder = checkpoint_store.local_folder(checkpoint)
    manifest = json.loads((folder / "manifest.json").read_text())
    meta = manifest["group_heads"]
    assert meta["field"] == "age_band"
    sizes = dict(zip(meta["groups"], meta["sizes"], strict=True))
    counted = {  # annotators with rankings in the snapshot, by their band, counted here
        band: len(
            {
                a
                for _, a, _, d, _ in snapshot_rankings(grouped.snapshot)
                if d.get("age_band") == band
            }
        )
        for band in ("18-24", "25-34")
    }
    assert sizes == counted and counted["25-34"] == 2 and counted["18-24"] >= 5
    assert manifest["hyperparameters"]["steering"] == {"kind": "group_heads", "field": "age_band"}
    assert meta["cv"]["chosen"] == "now"
    snapshot = DatasetSnapshot.objects.get(pk=grouped.snapshot_id)
    ((key, recorded),) = snapshot.group_penalties.items()
    assert key.startswith("age_band:")
    assert recorded["penalty"] == meta["penalty"] and "chosen" not in recorded
    assert recorded["spread"]["penalty"] == meta["cv"]["spread"]["penalty"]
    # a retrain on the snapshot reuses the penalty and says so
    again = start_run(
        snapshot, hyperparameters=FAST, steering=parse(groups="age_band"), enqueue=False
    )
    assert execute_run(again.pk, "node-a").startswith("done")
    again.refresh_from_db()
    heads = load_model(again.checkpoint).groups
    assert heads.cv["chosen"] == "recorded with the snapshot" and heads.penalty == meta["penalty"]


def test_the_card_and_the_registry_list_the_groups_never_one_under_k(grouped, settings):
    from training.registry.card import model_card

    checkpoint = grouped.checkpoint
    sizes = {g["group"]: g["annotators"] for g in checkpoint.metrics["group_heads"]["groups"]}
    card = model_card(checkpoint, validation=[])
    assert "### Group heads (age_band)" in card
    assert all(f"- {g}: {n} annotators" in card for g, n in sizes.items())
    assert "The seed `.pth` export holds the pooled head only" in card
    out = io.StringIO()
    call_command("checkpoints", stdout=out)
    assert "age_band (2)" in out.getvalue()
    settings.STEREORANK = {**settings.STEREORANK, "GROUP_K": 3}  # 25-34 has 2
    card = model_card(checkpoint, validation=[])
    assert "25-34" not in card and "1 group(s) under k not named" in card
    # the staff API shows the same, never the raw metrics' small group
    api = APIClient()
    api.force_authenticate(make_staff("viewer-of-versions"))
    listed = api.get("/api/training/checkpoints/").json()
    (heads,) = [c["metrics"]["group_heads"] for c in listed]
    assert [g["group"] for g in heads["groups"]] == ["18-24"] and heads["hidden_groups"] == 1
    assert "25-34" not in json.dumps(listed)


def test_a_promotion_checked_against_a_version_no_longer_active_is_refused(grouped):
    from training.errors import RegistryConflict
    from training.services import activate

    again = start_run(
        grouped.snapshot, hyperparameters=FAST, steering=parse(groups="age_band"), enqueue=False
    )
    execute_run(again.pk, "node-a")
    again.refresh_from_db()
    with pytest.raises(RegistryConflict, match="became active during the group check"):
        activate(again.checkpoint, actor="test", checked_against=None)  # v1 is active now


def test_score_gives_disagreement_and_a_groups_score(grouped):
    model = load_model(grouped.checkpoint)
    emb = model.embed(PROMPTS, encoders.embedding_cache())
    pooled = model.score_embeddings(emb)
    offsets = model.groups.offsets_for(emb)
    body = json.loads(_score("--json"))
    assert body["group"] is None
    assert body["disagreement_threshold"] == pytest.approx(model.groups.threshold)
    spread = [r["disagreement"] for r in body["results"]]
    np.testing.assert_allclose(spread, model.groups.disagreement(emb), rtol=1e-5)
    assert [r["contested"] for r in body["results"]] == [d > model.groups.threshold for d in spread]
    np.testing.assert_allclose([r["score"] for r in body["results"]], pooled, rtol=1e-5)
    body = json.loads(_score("--group", "age_band:25-34", "--json"))
    assert body["group"] == "age_band:25-34"
    np.testing.assert_allclose(
        [r["score"] for r in body["results"]],
        pooled + offsets[model.groups.index("25-34")],
        rtol=1e-5,
        atol=1e-6,
    )
    assert "the head of age_band:25-34" in _score("--group", "age_band:25-34")


@pytest.mark.parametrize("group", ["age_band:65-74", "gender:18-24", "age_band", "25-34"])
def test_an_unknown_group_is_refused_naming_the_known_ones(grouped, group):
    with pytest.raises(CommandError) as refused:
        _score("--group", group)
    assert str(refused.value) == (
        f"version {grouped.checkpoint.version} has no group head {group!r}; known groups: "
        "age_band:18-24, age_band:25-34"
    )
    client = token_client(scoring_user())
    r = client.post("/api/score/", {"prompts": PROMPTS, "group": group}, format="json")
    assert (
        r.status_code == 400
        and "known groups: age_band:18-24, age_band:25-34" in r.json()["detail"]
    )


def test_a_group_under_todays_k_is_neither_served_nor_named(grouped, settings):
    settings.STEREORANK = {**settings.STEREORANK, "GROUP_K": 3}
    client = token_client(scoring_user())
    r = client.post("/api/score/", {"prompts": PROMPTS, "group": "age_band:25-34"}, format="json")
    assert r.status_code == 400
    assert r.json()["detail"].endswith("known groups: age_band:18-24")
    r = client.post("/api/score/", {"prompts": PROMPTS, "group": "age_band:18-24"}, format="json")
    assert r.status_code == 200 and r.json()["group"] == "age_band:18-24"


def test_a_version_without_heads_says_so(db, tmp_path, settings):
    make_perspective_study(tmp_path)
    snapshot = create_snapshot(include_synthetic=True)
    run = start_run(snapshot, hyperparameters=FAST, enqueue=False)
    execute_run(run.pk, "node-a")
    run.refresh_from_db()
    promote(run.checkpoint, actor="test")
    body = json.loads(_score("--json"))
    assert body["disagreement_threshold"] is None
    assert {(r["disagreement"], r["contested"]) for r in body["results"]} == {(None, None)}
    client = token_client(scoring_user())
    r = client.post("/api/score/", {"prompts": PROMPTS, "group": "age_band:18-24"}, format="json")
    assert r.status_code == 400
    assert r.json()["detail"] == (
        f"version {run.checkpoint.version} has no group heads: train one with --groups FIELD"
    )


@says(
    "Group heads on a special category (religion or belief) are trained only after a study "
    "owner with the demographics permission has recorded the choice and its reason "
    "(`manage.py allow_group_heads`)."
)
def test_refusals_at_the_start_of_a_run(db, tmp_path, settings):
    make_perspective_study(tmp_path)
    settings.STEREORANK = {**settings.STEREORANK, "GROUP_K": 2}
    snapshot = create_snapshot(include_synthetic=True)
    special = parse(groups="religion_or_belief")
    with pytest.raises(
        RunError,
        match="need a study owner's recorded choice \\(manage.py "
        "allow_group_heads default religion_or_belief",
    ):
        start_run(snapshot, steering=special, enqueue=False)
    # only an owner with the demographics permission may choose it, and only with a reason
    make_staff("reader", demographics=False)
    make_staff("owner")

    def choose(field: str, owner: str, *more: str) -> None:
        call_command(
            "allow_group_heads", "default", field, "--owner", owner, *more, stdout=io.StringIO()
        )

    with pytest.raises(CommandError, match="reader is not an owner of default with the demo"):
        choose("religion_or_belief", "reader", "--reason", "x")
    with pytest.raises(CommandError, match="--reason is required"):
        choose("religion_or_belief", "owner")
    with pytest.raises(CommandError, match="age_band is not a special category"):
        choose("age_band", "owner")
    choose("religion_or_belief", "owner", "--reason", "the ethics board approved it (ref 12)")
    choice = GroupHeadChoice.objects.get()
    assert (choice.chosen_by_name, choice.field) == ("owner", "religion_or_belief")
    # chosen: refused now only for what the data lacks (no religion groups in this study)
    with pytest.raises(RunError, match="need 2 groups of 2 or more annotators"):
        start_run(snapshot, steering=special, enqueue=False)
    choose("religion_or_belief", "owner", "--withdraw")
    assert not GroupHeadChoice.objects.exists()
    settings.STEREORANK = {**settings.STEREORANK, "GROUP_K": 3}  # 25-34 (2) falls under k
    with pytest.raises(RunError, match="need 2 groups of 3 or more annotators"):
        start_run(snapshot, steering=parse(groups="age_band"), enqueue=False)
    with pytest.raises(CommandError, match="not allowed with argument"):
        call_command(
            "train", "--snapshot", str(snapshot.pk), "--groups", "age_band", "--balance", "x"
        )
