"""The embedding cache's bound and compaction: the LRU stays within ``max_entries``, and
compaction under concurrent writers and readers in other processes loses nothing, never
makes a reader encode again, and leaves a few shards."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from ml_fakes import FakeEncoder

from training.ml.cache import LEGACY, SUFFIX, EmbeddingCache, _text_digest

REPO = Path(__file__).resolve().parents[2]


def _shards(root: Path, enc) -> list[Path]:
    folder = root / enc.identity.key
    return sorted(p for p in folder.iterdir() if p.suffix in (SUFFIX, LEGACY))


def test_the_in_memory_index_is_bounded_and_misses_are_read_from_disk(tmp_path):
    enc = FakeEncoder()
    cache = EmbeddingCache(tmp_path, max_entries=5)
    texts = [f"t{i}" for i in range(40)]
    for start in range(0, 40, 8):
        cache.embed(enc, texts[start : start + 8])
    assert len(cache._lru) == 5 and enc.texts_encoded == 40
    # The five most recent stay in memory; the rest come from the mapped shards.
    recent = {_text_digest(enc.identity.key, t) for t in texts[-5:]}
    assert set(cache._lru) == recent
    assert all(v.base is None for v in cache._lru.values())  # no view keeps a block alive
    rows = cache.embed(enc, texts)
    assert enc.texts_encoded == 40 and len(cache._lru) == 5
    np.testing.assert_array_equal(rows, np.stack([enc.vector(t) for t in texts]))
    # One call asking for more than the bound still answers every row.
    assert cache.embed(enc, texts[::-1]).shape == (40, enc.identity.dim)


def test_past_max_shards_a_write_merges_all_but_the_largest(tmp_path):
    enc = FakeEncoder()
    cache = EmbeddingCache(tmp_path, max_shards=3)
    cache.embed(enc, [f"big {i}" for i in range(50)])
    for i in range(2):
        cache.embed(enc, [f"small {i}"])
    assert len(_shards(tmp_path, enc)) == 3
    cache.embed(enc, ["small 2"])  # the fourth shard: the three small ones are merged
    sizes = sorted(len(s) for s in cache._shards[enc.identity.key].values())
    assert sizes == [3, 50] and len(_shards(tmp_path, enc)) == 2
    cache.embed(enc, ["small 3"])
    assert len(_shards(tmp_path, enc)) == 3
    fresh = EmbeddingCache(tmp_path)
    texts = [f"big {i}" for i in range(50)] + [f"small {i}" for i in range(4)]
    np.testing.assert_array_equal(fresh.embed(enc, texts), np.stack([enc.vector(t) for t in texts]))
    assert enc.texts_encoded == 54


def test_legacy_npz_shards_are_read_and_folded_in_by_compaction(tmp_path):
    enc = FakeEncoder()
    folder = tmp_path / enc.identity.key
    EmbeddingCache(tmp_path).embed(enc, ["warm-up"])  # makes the folder and identity.json
    texts = ["a", "b", "c"]
    keys = np.frombuffer(
        b"".join(_text_digest(enc.identity.key, t) for t in texts), np.uint8
    ).reshape(3, 32)
    with open(folder / f"old{LEGACY}", "wb") as f:
        np.savez(f, keys=keys, vectors=np.stack([enc.vector(t) for t in texts]))
    cache = EmbeddingCache(tmp_path)
    np.testing.assert_array_equal(cache.embed(enc, texts), np.stack([enc.vector(t) for t in texts]))
    assert enc.encode_calls == 1  # only the warm-up
    assert cache.compact(enc.identity) == 4
    assert [p.suffix for p in _shards(tmp_path, enc)] == [SUFFIX]


def test_a_damaged_shard_is_skipped_and_its_texts_encoded_again(tmp_path, caplog):
    enc = FakeEncoder()
    EmbeddingCache(tmp_path).embed(enc, ["a", "b"])
    (shard,) = _shards(tmp_path, enc)
    shard.write_bytes(shard.read_bytes()[:-4])  # truncated
    rows = EmbeddingCache(tmp_path).embed(enc, ["a", "b"])
    assert enc.encode_calls == 2 and "do not hold 2 rows" in caplog.text
    np.testing.assert_array_equal(rows, np.stack([enc.vector(t) for t in "ab"]))


SCRIPT = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {repo!r}); sys.path.insert(0, {tests!r})
    from ml_fakes import FakeEncoder
    from training.ml.cache import EmbeddingCache
    role, n = sys.argv[1], int(sys.argv[2])
    enc = FakeEncoder()
    if role == "writer":  # many small shards, compacting past 4 of them
        cache = EmbeddingCache({root!r}, max_entries=16, max_shards=4)
        for r in range(60):
            texts = [f"w{{n}} {{r}} {{i}}" for i in range(3)] + [f"shared {{r % 7}}"]
            rows = cache.embed(enc, texts)
            assert all((row == enc.vector(t)).all() for t, row in zip(texts, rows)), texts
    elif role == "compactor":  # full compactions, as the command does, in a loop
        cache = EmbeddingCache({root!r}, max_shards=None)
        for _ in range(n):
            cache.embed(enc, ["seed 0"])
            cache.compact(enc.identity)
    else:  # a reader of texts stored before it started: it must never encode
        texts = [f"seed {{i}}" for i in range(200)]
        cache = EmbeddingCache({root!r}, max_entries=8, max_shards=None)
        deadline = time.monotonic() + n
        rounds = 0
        while time.monotonic() < deadline or rounds < 3:
            rows = cache.embed(enc, texts)
            assert all((row == enc.vector(t)).all() for t, row in zip(texts, rows))
            rounds += 1
        assert enc.encode_calls == 0, enc.encode_calls
        print(rounds)
    """
)


@pytest.mark.parametrize("writers", [3])
def test_compaction_under_concurrent_writers_and_readers_loses_nothing(tmp_path, writers):
    enc = FakeEncoder()
    seed_cache = EmbeddingCache(tmp_path, max_shards=None)
    for i in range(0, 200, 20):  # ten shards the reader needs, before anyone starts
        seed_cache.embed(enc, [f"seed {i + j}" for j in range(20)])
    script = SCRIPT.format(repo=str(REPO), tests=str(Path(__file__).parent), root=str(tmp_path))

    def spawn(*args):
        return subprocess.Popen(
            [sys.executable, "-c", script, *map(str, args)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    procs = [spawn("writer", n) for n in range(writers)]
    procs += [spawn("compactor", 25), spawn("reader", 8)]
    results = [(p.wait(timeout=300), p.stderr.read()[-2000:]) for p in procs]
    assert [rc for rc, _ in results] == [0] * len(procs), results
    assert int(procs[-1].stdout.read()) >= 3  # the reader read through the compactions

    fresh = EmbeddingCache(tmp_path, max_shards=None)
    texts = [f"seed {i}" for i in range(200)] + [f"shared {r}" for r in range(7)]
    texts += [f"w{n} {r} {i}" for n in range(writers) for r in range(60) for i in range(3)]
    rows = fresh.embed(enc, texts)
    assert enc.encode_calls == 10, "every text some process wrote is on disk"
    np.testing.assert_array_equal(rows, np.stack([enc.vector(t) for t in texts]))
    assert fresh.compact(enc.identity) == len(texts)
    assert len(_shards(tmp_path, enc)) == 1
    assert not list((tmp_path / enc.identity.key).glob(".*.tmp"))


def test_compact_embeddings_command_merges_every_encoder_folder(tmp_path, settings):
    import io

    from django.core.management import call_command

    settings.TRAINING = {**settings.TRAINING, "EMBEDDING_CACHE": tmp_path}
    out = io.StringIO()
    call_command("compact_embeddings", stdout=out)
    assert out.getvalue() == "the embedding cache is empty\n"
    a, b = FakeEncoder(weight_sha256="a" * 64), FakeEncoder(weight_sha256="b" * 64)
    cache = EmbeddingCache(tmp_path, max_shards=None)
    for i in range(4):
        cache.embed(a, [f"a{i}"])
        cache.embed(b, [f"b{i}", f"b{i + 1}"])
    call_command("compact_embeddings", stdout=out)
    assert sorted(out.getvalue().splitlines()[1:]) == sorted(
        [
            f"{a.identity.key}: 4 embeddings in one shard",
            f"{b.identity.key}: 5 embeddings in one shard",
        ]
    )
    assert len(_shards(tmp_path, a)) == len(_shards(tmp_path, b)) == 1
