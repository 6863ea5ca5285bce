"""The embedding cache as scoring uses it: many calls, each with a few new texts.

Runs the same workload on this tree's cache and on the cache of an earlier revision
(``--against``, default 4d5d137: one ``.npz`` shard per write, never compacted, every
vector in a per-process dict), in one run. A stand-in encoder (seeded random vectors of
mpnet's 768 dimensions) keeps the figures the cache's own. Prints, per implementation:
the time of the writes, shards on disk, a new process's first lookup of every text,
a warm lookup of 64 known texts, and the memory one process holds after reading all.

    .venv/bin/python benchmarks/embedding_cache.py [--calls 1000] [--per-call 5]
        [--max-entries 1000]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from _common import arguments  # noqa: E402

from benchmarks._common import load  # noqa: E402
from training.ml.encoders.identity import EncoderIdentity  # noqa: E402


class StandIn:
    """768-dimensional vectors from a hash of the text: no model, the cache's cost only."""

    identity = EncoderIdentity("stand-in", None, "e" * 64, 768, 384, True)

    def encode(self, texts):
        return np.stack(
            [
                np.random.default_rng(int(hashlib.sha256(t.encode()).hexdigest()[:8], 16))
                .standard_normal(768)
                .astype(np.float32)
                for t in texts
            ]
        )


def _module_at(revision: str):
    source = subprocess.run(
        ["git", "show", f"{revision}:training/ml/cache.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "cache_then.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("cache_then", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(name: str, cls, calls: int, per_call: int) -> dict:
    enc = StandIn()
    root = Path(tempfile.mkdtemp(prefix="emb-bench-"))
    texts = [f"prompt {i}" for i in range(calls * per_call)]
    cache = cls(root)
    start = time.perf_counter()
    for c in range(calls):
        cache.embed(enc, texts[c * per_call : (c + 1) * per_call])
    write_s = time.perf_counter() - start
    shards = len([p for p in (root / enc.identity.key).iterdir() if p.suffix in (".npz", ".emb")])
    tracemalloc.start()
    fresh = cls(root)
    start = time.perf_counter()
    fresh.embed(enc, texts)
    first_s = time.perf_counter() - start
    held_mb = tracemalloc.get_traced_memory()[0] / 1e6
    tracemalloc.stop()
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    for _ in range(200):
        fresh.embed(enc, [texts[i] for i in rng.integers(0, len(texts), 64)])
    warm_ms = (time.perf_counter() - start) / 200 * 1000
    return {
        "cache": name,
        "texts": len(texts),
        "write_s": round(write_s, 2),
        "shards": shards,
        "first_lookup_s": round(first_s, 3),
        "warm_64_ms": round(warm_ms, 3),
        "held_mb": round(held_mb, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--per-call", type=int, default=5)
    parser.add_argument("--max-entries", type=int, default=1000, help="this tree's LRU bound")
    parser.add_argument("--against", default="4d5d137")
    args = arguments(parser, {"calls": 20, "per_call": 2, "max_entries": 20})
    from training.ml.cache import EmbeddingCache

    print(f"load average before: {load()}")
    then = _module_at(args.against).EmbeddingCache
    rows = [
        run(f"{args.against} (no compaction)", then, args.calls, args.per_call),
        run(
            f"this tree (LRU {args.max_entries})",
            lambda root: EmbeddingCache(root, max_entries=args.max_entries),
            args.calls,
            args.per_call,
        ),
    ]
    keys = list(rows[0])
    print(" | ".join(keys))
    for row in rows:
        print(" | ".join(str(row[k]) for k in keys))
    print(f"load average after: {load()}")


if __name__ == "__main__":
    main()
