import json

import pytest

from training.ml.examples import Example, data_hash, read_jsonl
from training.ml.split import group_split, natural_key
from training.ml.synthetic import synthetic_examples


def test_read_jsonl_and_line_numbers(tmp_path):
    good = {"text": "a nurse", "label": 0.5, "group": "g1", "occupation": "nurse"}
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps(good) + "\n\n" + json.dumps({**good, "prompt_type": "neutral"}))
    assert read_jsonl(path) == [
        Example("a nurse", 0.5, "g1", "nurse"),
        Example("a nurse", 0.5, "g1", "nurse", "neutral"),
    ]
    for bad in ("{not json", json.dumps({**good, "label": "x"}), json.dumps({"text": "t"})):
        path.write_text(json.dumps(good) + "\n" + json.dumps(good) + "\n" + bad + "\n")
        with pytest.raises(ValueError, match=r"d\.jsonl:3:"):
            read_jsonl(path)


def test_group_split_keeps_groups_whole_and_is_seeded():
    ex = synthetic_examples(n_occupations=4, prompts_per_type=3, variants=4)
    train, held = group_split(ex, 0.25, seed=0)
    assert not {e.group for e in train} & {e.group for e in held}
    assert len(train) + len(held) == len(ex)
    assert len({e.group for e in held}) == 9  # round(0.25 * 36)
    assert group_split(ex, 0.25, seed=0) == (train, held)
    assert group_split(ex, 0.25, seed=1)[1] != held


def test_group_split_holds_out_the_same_prompts_whatever_their_ids_start_from():
    """Ids from 1 (SQLite after a rollback) or from 95 (a PostgreSQL sequence that
    moved on): the same prompts, in the same order, go to eval."""

    def held_out(first_id: int) -> list[int]:
        ex = [Example(f"p{i}", 0.5, f"prompt-{first_id + i}", "o") for i in range(12)]
        _, held = group_split(ex, 0.25, seed=0)
        return sorted(int(e.group.removeprefix("prompt-")) - first_id for e in held)

    assert held_out(1) == held_out(95) == held_out(1000)
    names = ["prompt-10", "prompt-9", "prompt-100", "g1", "g01", "prompt-1"]
    assert sorted(names, key=natural_key) == [
        "g01",
        "g1",
        "prompt-1",
        "prompt-9",
        "prompt-10",
        "prompt-100",
    ]


def test_group_split_needs_groups_on_both_sides():
    one = [Example("a", 0.1, "g", "o"), Example("b", 0.1, "g", "o")]
    with pytest.raises(ValueError, match="group"):
        group_split(one)
    with pytest.raises(ValueError):
        group_split(one + [Example("c", 0.2, "h", "o")], eval_fraction=1.0)


def test_data_hash_is_order_independent_and_content_sensitive():
    ex = synthetic_examples(n_occupations=2, prompts_per_type=2, variants=2)
    assert data_hash(ex) == data_hash(list(reversed(ex)))
    changed = [Example(ex[0].text, ex[0].label + 0.01, ex[0].group, ex[0].occupation)] + ex[1:]
    assert data_hash(changed) != data_hash(ex)


def test_synthetic_examples_match_the_seed_sizes():
    ex = synthetic_examples()
    assert len(ex) == 10800 and len({e.text for e in ex}) == 10800
    assert len({e.group for e in ex}) == 1200 and len({e.occupation for e in ex}) == 40


def test_data_hash_leaves_weights_of_one_out():
    import hashlib
    import json

    from training.ml.examples import Example, data_hash

    plain = [Example("a nurse", 0.5, "p1", "nurse", "neutral")]
    row = {"text": "a nurse", "label": 0.5, "group": "p1", "occupation": "nurse"}
    row["prompt_type"] = "neutral"
    by_hand = hashlib.sha256(json.dumps(row, sort_keys=True).encode()).hexdigest()
    assert data_hash(plain) == by_hand  # as before weights existed
    heavier = [Example("a nurse", 0.5, "p1", "nurse", "neutral", weight=2.0)]
    assert data_hash(heavier) != by_hand
