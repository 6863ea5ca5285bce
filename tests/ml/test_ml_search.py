"""The hyper-parameter search: its space, grouped folds, heads trained at once, CV intervals."""

from dataclasses import replace

import numpy as np
import pytest
import torch
from ml_fakes import FakeEncoder
from scipy import stats

from training.ml.heads import train_heads
from training.ml.metrics import spearman
from training.ml.search import (
    SearchError,
    choose,
    column_spearman,
    corrected_interval,
    grouped_folds,
    search,
)
from training.ml.search_space import SearchSpace, SearchSpecError
from training.ml.train import TrainConfig, train

CONFIGS = [
    {"lr": 1e-2, "epochs": 3, "alpha": 0.01, "temperature": 0.5, "weight_decay": 0.01},
    {"lr": 3e-2, "epochs": 2, "alpha": 1.0, "temperature": 0.25, "weight_decay": 0.0},
    {"lr": 1e-3, "epochs": 1, "alpha": 0.1, "temperature": 1.0, "weight_decay": 0.1},
]


def _embed(examples, encoder):
    return encoder.encode([e.text for e in examples])


# --- the space ----------------------------------------------------------------------------


def test_default_grid_has_144_configurations_holding_the_standard_recipe():
    space = SearchSpace()
    configs = space.configs()
    assert space.size == len(configs) == 144 and space.folds == 5
    standard = {"lr": 1e-2, "epochs": 12, "alpha": 0.01, "temperature": 0.5, "weight_decay": 0.01}
    assert standard in configs
    assert len({tuple(c.values()) for c in configs}) == 144


def test_spec_names_some_keys_and_keeps_the_default_grid_for_the_rest():
    space = SearchSpace.parse("lr=1e-3,1e-2; epochs=4 folds=3")
    assert space.lr == (1e-3, 1e-2) and space.epochs == (4,) and space.folds == 3
    assert space.alpha == SearchSpace().alpha
    assert SearchSpace.from_value({"lr": [0.01], "epochs": 2}).size == 1 * 1 * 3 * 2 * 2
    assert SearchSpace.from_value(True) == SearchSpace()
    assert SearchSpace.from_value(False) is None and SearchSpace.from_value(None) is None


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("lr=0", "lr=0.0 must be finite and > 0"),
        ("epochs=1.5", "epochs must be whole numbers"),
        ("lr", "is not KEY=V1,V2"),
        ("momentum=0.9", "unknown key 'momentum'"),
        ("folds=1", "folds=1 must be a whole number >= 2"),
        ("lr=abc", "lr must be numbers"),
        ("lr=1e-2,1e-2", "lr repeats a value"),
        ("lr=" + ",".join(str(i / 1000 + 1e-4) for i in range(1, 101)), "more than 1000"),
    ],
)
def test_a_bad_spec_is_refused_with_what_is_wrong(spec, says):
    with pytest.raises(SearchSpecError, match=says):
        SearchSpace.parse(spec)


def test_a_spec_of_the_wrong_type_is_refused():
    with pytest.raises(SearchSpecError, match="true, a spec string or an object"):
        SearchSpace.from_value(3)
    with pytest.raises(SearchSpecError, match="epochs must be whole numbers"):
        SearchSpace.from_value({"epochs": [True]})


# --- folds --------------------------------------------------------------------------------


def test_folds_keep_paraphrases_with_their_origin_and_cover_every_example(small_examples):
    groups = [e.group for e in small_examples]
    folds = grouped_folds(groups, 5)
    held = np.concatenate([h for _, h in folds])
    assert sorted(held.tolist()) == list(range(len(groups)))
    for train_idx, held_idx in folds:
        assert not {groups[i] for i in train_idx} & {groups[i] for i in held_idx}
        assert len(train_idx) + len(held_idx) == len(groups)


def test_too_few_prompts_for_the_folds_is_refused(small_examples):
    two = [e for e in small_examples if e.group in {small_examples[0].group, "nurse/neutral/1"}]
    with pytest.raises(SearchError, match="5 folds need at least 5 prompts; the split has 2"):
        grouped_folds([e.group for e in two], 5)


def test_a_fold_is_scored_on_its_held_out_originals_only(small_examples):
    """Each fold's rho is the heads' Spearman over the held-out fold's ``scored`` examples
    (the originals), recomputed here from the folds and the heads by hand."""
    encoder = FakeEncoder(dim=8)
    space = SearchSpace(
        lr=(1e-2, 3e-2),
        epochs=(2,),
        alpha=(0.01,),
        temperature=(0.5,),
        weight_decay=(0.0,),
        folds=3,
    )
    originals = [i % 3 == 0 for i in range(len(small_examples))]  # 3 variants, first original
    emb = _embed(small_examples, encoder)
    result = search(small_examples, emb, space, scored=originals, seed=2)
    groups = [e.group for e in small_examples]
    for f, (train_idx, held_idx) in enumerate(grouped_folds(groups, 3)):
        part = [small_examples[i] for i in train_idx]
        w, b = train_heads(
            torch.from_numpy(emb[train_idx]),
            torch.tensor([e.label for e in part]),
            [e.occupation for e in part],
            space.configs(),
            seed=2,
        )
        held = [i for i in held_idx if originals[i]]
        pred = (torch.from_numpy(emb[held]) @ w.T + b).numpy()
        for j, score in enumerate(result.scores):
            want = spearman(pred[:, j], [small_examples[i].label for i in held])
            assert score.fold_rhos[f] == pytest.approx(want, abs=1e-6)


# --- heads trained at once ----------------------------------------------------------------


@pytest.mark.parametrize("weighted", [False, True])
def test_heads_trained_at_once_equal_the_one_head_trainer(small_examples, weighted):
    encoder = FakeEncoder(dim=8)
    examples = small_examples
    if weighted:
        rng = np.random.default_rng(0)
        draws = rng.uniform(0.5, 1.5, len(examples))
        examples = [replace(e, weight=float(w)) for e, w in zip(examples, draws, strict=True)]
    emb = torch.from_numpy(_embed(examples, encoder))
    labels = torch.tensor([e.label for e in examples])
    weights = torch.tensor([e.weight for e in examples]) if weighted else None
    w, b = train_heads(
        emb,
        labels,
        [e.occupation for e in examples],
        CONFIGS,
        weights=weights,
        seed=3,
        occupations_per_batch=2,
    )
    for h, config in enumerate(CONFIGS):
        one = train(examples, encoder, TrainConfig(**config, seed=3, occupations_per_batch=2))
        torch.testing.assert_close(w[h], one.model.fc.weight[0].detach(), rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(b[h], one.model.fc.bias[0].detach(), rtol=1e-4, atol=1e-5)


def test_heads_leave_the_callers_rng_alone_and_report_each_epoch(small_examples):
    encoder = FakeEncoder(dim=8)
    emb = torch.from_numpy(_embed(small_examples, encoder))
    state = torch.get_rng_state()
    seen = []
    train_heads(
        emb,
        torch.tensor([e.label for e in small_examples]),
        [e.occupation for e in small_examples],
        CONFIGS,
        on_epoch=lambda e, n: seen.append((e, n)),
    )
    assert torch.equal(state, torch.get_rng_state())
    assert seen == [(1, 3), (2, 3), (3, 3)]


# --- figures ------------------------------------------------------------------------------


def test_column_spearman_equals_scipy_per_column_with_ties_and_constants():
    rng = np.random.default_rng(1)
    target = rng.integers(0, 5, 40).astype(float)
    pred = np.column_stack([rng.normal(size=40), rng.integers(0, 3, 40), np.ones(40)])
    got = column_spearman(pred, target)
    for j in range(2):
        assert got[j] == pytest.approx(stats.spearmanr(pred[:, j], target).statistic)
        assert got[j] == pytest.approx(spearman(pred[:, j], target))
    assert np.isnan(got[2])


def test_corrected_interval_by_hand_and_by_scipy():
    folds = [0.60, 0.70, 0.65, 0.55, 0.75]
    # By hand: mean 0.65, s^2 = 0.00625, (1/5 + 1/4) * s^2 = 0.0028125, se = 0.053033,
    # t(0.975, 4) = 2.776445 -> half-width 0.147243.
    lo, hi = corrected_interval(folds, 0.25)
    assert lo == pytest.approx(0.65 - 0.147243, abs=1e-6)
    assert hi == pytest.approx(0.65 + 0.147243, abs=1e-6)
    scale = np.sqrt((1 / 5 + 0.25) * np.var(folds, ddof=1))
    assert [lo, hi] == pytest.approx(list(stats.t.interval(0.95, 4, loc=0.65, scale=scale)))
    assert corrected_interval([0.5, float("nan")], 0.25) is None


def test_choice_is_the_best_mean_nan_lowest_first_on_ties():
    assert choose([0.2, float("nan"), 0.5, 0.5]) == 2
    assert choose([float("nan"), 0.1]) == 1


def test_search_records_every_configuration_and_reports_progress(small_examples):
    encoder = FakeEncoder(dim=8)
    space = SearchSpace(
        lr=(1e-3, 3e-2),
        epochs=(1, 2),
        alpha=(0.01,),
        temperature=(0.5,),
        weight_decay=(0.0,),
        folds=3,
    )
    ticks = []
    result = search(
        small_examples,
        _embed(small_examples, encoder),
        space,
        on_progress=lambda d, t: ticks.append((d, t)),
    )
    assert [s.config for s in result.scores] == space.configs()
    assert ticks == [(d, 6) for d in range(1, 7)]
    means = [s.mean for s in result.scores]
    assert result.chosen == int(np.nanargmax(means))
    for s in result.scores:
        assert len(s.fold_rhos) == 3 and s.mean == pytest.approx(np.mean(s.fold_rhos))
        assert s.ci[0] < s.mean < s.ci[1]
    assert result.as_dict()["scores"][0]["config"] == space.configs()[0]
