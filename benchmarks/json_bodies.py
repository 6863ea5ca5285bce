"""The API's strict JSON parser against DRF's own, on the bodies the API takes.

``core.api_bodies.StrictJSONParser`` (nesting counted before parsing, NaN and duplicate
keys refused) against ``rest_framework.parsers.JSONParser``, in one process, alternated
batch by batch: microseconds per body for a ranking submit, a demographics answer and a
staff study, and for a 2 MB array (the largest body the API takes), with the ratio.

    .venv/bin/python benchmarks/json_bodies.py [--repeat 2000]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "web.settings")
os.environ.setdefault("STEREORANK_EMBEDDED", "true")

from _common import arguments, load  # noqa: E402

BODIES = {
    "ranking submit": {"order": [11, 14, 12, 15, 13, 16], "seconds_spent": 23.5},
    "demographics": {"demographics": {"age_band": "25-34", "gender": "woman", "religion": "none"}},
    "staff study": {"slug": "wave-2", "platform": "prolific", "completion_code": "C1A2B3C4",
                    "screen_out_code": "NOCONSENT", "task_size": 6, "overlap": 2},
    "2 MB array": list(range(300_000)),
}  # fmt: skip


def batch(parser, raw: bytes, repeat: int) -> float:
    """Microseconds per parse of ``raw`` over ``repeat`` parses."""
    started = time.perf_counter()
    for _ in range(repeat):
        parser.parse(io.BytesIO(raw), "application/json", {"encoding": "utf-8"})
    return (time.perf_counter() - started) / repeat * 1e6


def paired(first, second, raw: bytes, repeat: int, rounds: int = 7) -> tuple[float, float]:
    """The medians of ``rounds`` batches of each parser, alternated batch by batch (so both
    meet the same moments of the machine)."""
    a, b = [], []
    for _ in range(rounds):
        a.append(batch(first, raw, repeat))
        b.append(batch(second, raw, repeat))
    return sorted(a)[rounds // 2], sorted(b)[rounds // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2000, help="parses per batch")
    args = arguments(parser, {"repeat": 20})
    import django

    django.setup()
    from rest_framework.parsers import JSONParser

    from core.api_bodies import StrictJSONParser

    print(f"{time.strftime('%Y-%m-%d %H:%M')}  load before: {load()}")
    print(f"{'body':16} {'bytes':>9} {'DRF µs':>10} {'strict µs':>10} {'ratio':>6}")
    for name, body in BODIES.items():
        raw = json.dumps(body).encode()
        repeat = max(1, args.repeat // 1000) if len(raw) > 100_000 else args.repeat
        drf, strict = paired(JSONParser(), StrictJSONParser(), raw, repeat)
        print(f"{name:16} {len(raw):>9} {drf:>10.1f} {strict:>10.1f} {strict / drf:>6.2f}")
    print(f"load after: {load()}")


if __name__ == "__main__":
    main()
