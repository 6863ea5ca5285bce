"""Group heads (training.ml.group_heads): the ridge fit against the normal equations, the
shrinkage, the CV's choice, the disagreement's spread and threshold, and the checkpoint's
third file (saved, verified, refused when tampered with)."""

import json
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from training.ml import checkpoints
from training.ml.checkpoints import Checkpoint, CheckpointError
from training.ml.group_heads import (
    GroupHeads,
    GroupTargets,
    SpreadTargets,
    _design,
    _ridge_path,
    choose_penalty,
    choose_spread_penalty,
    spread,
)
from training.ml.group_heads import fit as fit_heads


def fit(x, targets, spreads=None, *, field, penalty, cv=None, spread_penalty=1.0):
    """The fit with a flat disagreement target unless given."""
    if spreads is None:
        rows = np.arange(len(x))
        spreads = SpreadTargets(rows, np.full(len(x), 0.1))
    return fit_heads(
        x, targets, spreads, field=field, penalty=penalty, spread_penalty=spread_penalty, cv=cv
    )


def planted(seed=0, n_prompts=120, per_prompt=3, dim=16, effect=0.6):
    """Prompts on a unit sphere; group 'b' reads the prompts with a high first coordinate
    the other way (its label drops by ``effect`` there), group 'a' agrees with the pool."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_prompts, dim))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    x = np.repeat(centres, per_prompt, axis=0)
    prompts = [f"p{i}" for i in range(n_prompts) for _ in range(per_prompt)]
    contested = np.repeat(centres[:, 0] > 0.3, per_prompt)
    rows = np.arange(len(x))
    noise = 0.05
    a = GroupTargets(rows, rng.normal(0, noise, len(x)), 12)
    b = GroupTargets(rows, -effect * contested + rng.normal(0, noise, len(x)), 6)
    return x, prompts, {"a": a, "b": b}, contested


def test_the_ridge_path_solves_the_normal_equations():
    rng = np.random.default_rng(1)
    z = _design(rng.normal(size=(30, 5)))
    t = rng.normal(size=30)
    for lam, coef in zip([0.1, 3.0], _ridge_path(z, t, [0.1, 3.0]), strict=True):
        expected = np.linalg.solve(z.T @ z + lam * np.eye(z.shape[1]), z.T @ t)
        np.testing.assert_allclose(coef, expected, rtol=1e-8, atol=1e-10)


def test_the_disagreement_head_finds_split_prompts_and_its_null_threshold_is_calibrated():
    """Prompts whose labels split (SD 0.4, not 0.1) are found on held-out prompts; with
    spreads that follow no text, about 1 prompt in 20 is above the threshold."""
    x, prompts, targets, contested = planted(n_prompts=400, dim=8)
    rng = np.random.default_rng(6)
    rows = np.arange(len(x))
    sd = np.where(contested, 0.4, 0.1) + rng.normal(0, 0.03, len(x))
    train = np.array([int(p[1:]) % 4 != 0 for p in prompts])
    spreads = SpreadTargets(rows[train], sd[train], np.array(prompts)[train])
    cv = choose_spread_penalty(x, prompts, spreads)
    heads = fit(x, targets, spreads, field="f", penalty=1.0, spread_penalty=cv["penalty"])
    d = heads.disagreement(x)
    held, hit = d[~train], contested[~train]
    auroc = stats.mannwhitneyu(held[hit], held[~hit]).statistic / (hit.sum() * (~hit).sum())
    assert auroc > 0.9
    above = held > heads.threshold
    assert above[hit].mean() > 0.7 and above[~hit].mean() < 0.2
    # the level is the spreads' own, whatever the penalty (it shrinks the slope, not the mean)
    stiff = fit(x, targets, spreads, field="f", penalty=1.0, spread_penalty=1e6)
    assert stiff.disagreement(x[train]).mean() == pytest.approx(sd[train].mean(), abs=0.005)
    flat = SpreadTargets(rows, rng.normal(0.2, 0.03, len(x)), np.array(prompts))
    cv = choose_spread_penalty(x, prompts, flat)
    heads = fit(x, targets, flat, field="f", penalty=1.0, spread_penalty=cv["penalty"])
    assert (heads.disagreement(x) > heads.threshold).mean() <= 0.15


def test_spread_is_the_weighted_standard_deviation():
    rng = np.random.default_rng(2)
    offsets = rng.normal(size=(3, 7))
    shares = np.array([0.5, 0.3, 0.2])
    expected = [np.sqrt(np.cov(offsets[:, j], aweights=shares, bias=True)) for j in range(7)]
    np.testing.assert_allclose(spread(offsets, shares), expected, rtol=1e-10)


def test_heads_find_the_contested_prompts():
    x, prompts, targets, contested = planted()
    cv = choose_penalty(x, prompts, targets)
    assert cv["error"] < cv["pooled_error"]  # the offsets earn their keep on held-out prompts
    heads = fit(x, targets, field="age_band", penalty=cv["penalty"], cv=cv)
    assert heads.groups == ["a", "b"] and heads.sizes == [12, 6]
    d = heads.group_spread(x)
    auroc = stats.mannwhitneyu(d[contested], d[~contested]).statistic / (
        contested.sum() * (~contested).sum()
    )
    assert auroc > 0.9
    b = heads.offsets_for(x)[heads.index("b")]
    assert b[contested].mean() < b[~contested].mean() - 0.2  # a linear fit of a step


def test_noise_alone_picks_a_large_penalty_and_heads_near_the_pooled_one():
    rng = np.random.default_rng(3)
    x, prompts, targets, _ = planted(effect=0.0)
    targets = {g: replace(t, targets=rng.normal(0, 0.05, len(t.rows))) for g, t in targets.items()}
    cv = choose_penalty(x, prompts, targets)
    heads = fit(x, targets, field="age_band", penalty=cv["penalty"], cv=cv)
    assert cv["penalty"] >= 10
    assert np.abs(heads.offsets_for(x)).max() < 0.05


def test_a_huge_penalty_gives_the_pooled_head():
    x, _, targets, _ = planted()
    heads = fit(x, targets, field="f", penalty=1e9)
    assert np.abs(heads.offsets_for(x)).max() < 1e-6


def test_one_group_is_refused():
    x, _, targets, _ = planted()
    with pytest.raises(ValueError, match="two groups"):
        fit(x, {"a": targets["a"]}, field="f", penalty=1.0)


def test_the_rank_is_capped_and_the_offsets_are_a_low_rank_product():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(200, 12))
    rows = np.arange(200)
    targets = {f"g{i}": GroupTargets(rows, rng.normal(size=200), 5) for i in range(10)}
    heads = fit(x, targets, field="f", penalty=1.0)
    assert heads.basis.shape == (12, 8) and heads.weights.shape == (10, 8)


@pytest.fixture(scope="module")
def heads_for_minilm():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(60, 384)).astype(np.float32)
    rows = np.arange(60)
    targets = {g: GroupTargets(rows, rng.normal(0, 0.1, 60), 5 + i) for i, g in enumerate("ab")}
    return fit(x, targets, field="age_band", penalty=10.0)


def test_a_checkpoint_keeps_its_group_heads_and_refuses_a_tampered_file(
    minilm, heads_for_minilm, tmp_path
):
    from training.ml.model import RewardModel

    model = RewardModel(minilm)
    ckpt = Checkpoint.from_model(
        model, hyperparameters={}, data_hash="x", threshold=0.1, groups=heads_for_minilm
    )
    path = checkpoints.save(ckpt, tmp_path / "v1")
    assert sorted(p.name for p in path.iterdir()) == [
        "groups.safetensors",
        "head.safetensors",
        "manifest.json",
    ]
    meta = json.loads((path / "manifest.json").read_text())["group_heads"]
    assert meta["groups"] == ["a", "b"] and meta["sizes"] == [5, 6]
    back = checkpoints.load(path, minilm)
    np.testing.assert_array_equal(back.groups.basis, heads_for_minilm.basis)
    texts = ["a nurse", "a pilot in a wheelchair"]
    scores, disagreement = back.to_model(minilm).score_groups(texts, group="b")
    pooled, _ = back.to_model(minilm).score_groups(texts)
    emb = minilm.encode(texts)
    np.testing.assert_allclose(
        scores - pooled, heads_for_minilm.offsets_for(emb)[1], rtol=1e-4, atol=1e-6
    )
    np.testing.assert_allclose(
        disagreement, heads_for_minilm.disagreement(emb), rtol=1e-4, atol=1e-6
    )
    with pytest.raises(KeyError, match="no group head 'c'"):
        back.to_model(minilm).score_groups(texts, group="c")
    (path / "groups.safetensors").write_bytes(b"x" + (path / "groups.safetensors").read_bytes())
    with pytest.raises(CheckpointError, match="SHA-256"):
        checkpoints.load(path, minilm)


def test_from_parts_refuses_shapes_that_do_not_fit(heads_for_minilm):
    tensors = heads_for_minilm.tensors()
    tensors["weights"] = tensors["weights"][:1]
    with pytest.raises(ValueError, match="weights"):
        GroupHeads.from_parts(heads_for_minilm.meta(), tensors)
