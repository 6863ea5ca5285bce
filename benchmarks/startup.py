"""How long a management command takes to start: ``manage.py check``, now and at a git
revision, alternated in one run so the machine's noise hits both alike.

    .venv/bin/python benchmarks/startup.py [--rev ea724d9] [--repeats 7]

Prints each side's median wall time, the ratio, which heavy modules the URL conf
imports, and the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import arguments

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "scipy", "sentence_transformers", "matplotlib", "numpy")
PROBE = (
    "import os, sys; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'web.settings');"
    "import django; django.setup(); from django.urls import get_resolver;"
    "get_resolver().url_patterns;"
    f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules) or '-')"
)


def _time(tree: Path) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=tree, check=True, capture_output=True
    )
    return time.perf_counter() - start


def _heavy(tree: Path) -> str:
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=tree, capture_output=True, text=True)
    return out.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", help="a git revision to compare with (checked out to a temp dir)")
    parser.add_argument("--repeats", type=int, default=7)
    args = arguments(parser, {"repeats": 1})
    trees = {"now": ROOT}
    with tempfile.TemporaryDirectory() as tmp:
        if args.rev:
            old = Path(tmp) / "old"
            subprocess.run(
                ["git", "worktree", "add", "-q", "--detach", str(old), args.rev],
                cwd=ROOT,
                check=True,
            )
            trees[args.rev] = old
        try:
            times: dict[str, list[float]] = {name: [] for name in trees}
            for _ in range(args.repeats):
                for name, tree in trees.items():
                    times[name].append(_time(tree))
            for name, tree in trees.items():
                median = statistics.median(times[name])
                print(
                    f"{name:>10}: manage.py check median {median:.2f} s, URL conf imports "
                    f"{_heavy(tree)}"
                )
            if args.rev:
                ratio = statistics.median(times[args.rev]) / statistics.median(times["now"])
                print(f"ratio {args.rev} / now: {ratio:.1f}x")
        finally:
            if args.rev:
                subprocess.run(["git", "worktree", "remove", "--force", str(old)], cwd=ROOT)
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
