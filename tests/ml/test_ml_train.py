import numpy as np
import pytest
import torch
from ml_fakes import CountingEncoder

from training.ml.cache import EmbeddingCache
from training.ml.split import group_split
from training.ml.train import TrainConfig, TrainingCancelled, train

FAST = TrainConfig(epochs=12, lr=1e-2, n_boot=50)


@pytest.fixture(scope="module")
def split(small_examples):
    return group_split(small_examples, eval_fraction=0.25, seed=0)


def _weights(result):
    return {k: v.clone() for k, v in result.model.state_dict().items()}


def test_learns_on_synthetic_data_with_real_minilm(minilm, split):
    train_set, eval_set = split
    reports = []
    result = train(train_set, minilm, FAST, eval_examples=eval_set, on_epoch=reports.append)
    assert [r.epoch for r in reports] == list(range(1, 13)) and result.history == reports
    assert all(r.eval_metrics is not None for r in reports)
    assert result.metrics["spearman"] > 0.3, result.metrics
    assert result.metrics["spearman_ci"][0] > 0
    assert reports[-1].loss < reports[0].loss


def test_same_seed_same_weights_other_seed_other_weights(minilm, split):
    train_set, _ = split
    cfg = TrainConfig(epochs=3, lr=1e-2)
    a, b = train(train_set, minilm, cfg), train(train_set, minilm, cfg)
    for k, v in _weights(a).items():
        assert torch.equal(v, _weights(b)[k])
    c = train(train_set, minilm, TrainConfig(epochs=3, lr=1e-2, seed=1))
    assert not torch.equal(_weights(a)["fc.weight"], _weights(c)["fc.weight"])


def test_leaves_the_callers_rng_alone(minilm, split):
    state = torch.get_rng_state()
    train(split[0], minilm, TrainConfig(epochs=1))
    assert torch.equal(state, torch.get_rng_state())


def test_each_distinct_text_encoded_once_across_epochs_and_runs(minilm, split, tmp_path):
    train_set, eval_set = split
    counting = CountingEncoder(minilm)
    cache = EmbeddingCache(tmp_path)
    first = train(train_set, counting, FAST, eval_examples=eval_set, cache=cache)
    distinct = {e.text for e in train_set + eval_set}
    assert len(counting.calls) == 1 and sorted(counting.calls[0]) == sorted(distinct)
    assert (first.encode_calls, first.texts_encoded) == (1, len(distinct))
    second = train(
        train_set, counting, FAST, eval_examples=eval_set, cache=EmbeddingCache(tmp_path)
    )
    assert len(counting.calls) == 1 and second.encode_calls == 0
    assert torch.equal(_weights(first)["fc.weight"], _weights(second)["fc.weight"])


def test_seed_way_reencoding_reaches_the_same_model(minilm, split):
    train_set, eval_set = split
    cfg = TrainConfig(epochs=2, lr=1e-2, n_boot=0)
    ours = train(train_set, minilm, cfg, eval_examples=eval_set)
    seed_way = train(train_set, minilm, cfg, eval_examples=eval_set, embedding_mode="reencode")
    n_lists = len({e.occupation for e in train_set})
    assert seed_way.encode_calls == 2 * n_lists + 2 + 1  # per step, per epoch eval, final eval
    np.testing.assert_allclose(
        _weights(ours)["fc.weight"], _weights(seed_way)["fc.weight"], atol=1e-6
    )
    assert ours.metrics["spearman"] == pytest.approx(seed_way.metrics["spearman"], abs=1e-6)


def test_several_occupations_per_batch_pads_and_learns(minilm, split):
    train_set, eval_set = split
    cfg = TrainConfig(epochs=12, lr=1e-2, occupations_per_batch=4, n_boot=0)
    result = train(train_set, minilm, cfg, eval_examples=eval_set)
    assert result.metrics["spearman"] > 0.3


def test_should_stop_cancels_between_steps(minilm, split):
    calls = []

    def stop():
        calls.append(1)
        return len(calls) > 3

    with pytest.raises(TrainingCancelled):
        train(split[0], minilm, TrainConfig(epochs=5), should_stop=stop)
    assert len(calls) == 4


def test_config_round_trip_and_defaults_are_the_seeds():
    cfg = TrainConfig()
    assert (cfg.epochs, cfg.lr, cfg.temperature, cfg.alpha, cfg.dropout) == (
        12,
        1e-5,
        0.5,
        0.01,
        0.1,
    )
    assert TrainConfig(**cfg.to_dict()) == cfg


@pytest.mark.parametrize(
    "bad",
    [
        {"epochs": 0},
        {"lr": 0.0},
        {"temperature": 0.0},
        {"temperature": -1.0},
        {"alpha": -0.1},
        {"dropout": 1.0},
        {"occupations_per_batch": 0},
        {"n_boot": -1},
        {"lr": float("nan")},
    ],
)
def test_bad_hyperparameters_are_refused_with_their_name(bad):
    name = next(iter(bad))
    with pytest.raises(ValueError, match=name):
        TrainConfig(**bad)
    cfg = TrainConfig()
    setattr(cfg, name, bad[name])  # changed after construction: train checks again
    with pytest.raises(ValueError, match=name):
        train([object()], None, cfg)
