"""What the benchmarks that serve the app share: gunicorn on 127.0.0.1, the load average."""

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load() -> str:
    """The 1, 5 and 15 minute load averages, as the benchmarks print them."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


@contextmanager
def gunicorn(env: dict, port: int, tries: int, cwd: Path = ROOT) -> Iterator[subprocess.Popen]:
    """gunicorn (gunicorn.conf.py) serving web.wsgi from the tree ``cwd`` on
    127.0.0.1:``port`` with ``env``, once ``/login/`` answers (or after ``tries`` tries
    0.2 s apart); stopped on leaving."""
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "web.wsgi",
         "--bind", f"127.0.0.1:{port}"],
        cwd=cwd,
        env=env,
    )  # fmt: skip
    try:
        for _ in range(tries):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=5)
                break
            except OSError:
                time.sleep(0.2)
        yield server
    finally:
        server.terminate()
        server.wait()


def arguments(parser, smoke: dict):
    """``parser``'s arguments, with ``--smoke``: ``smoke`` as the defaults (flags given
    still win), a run of seconds that proves the benchmark still runs as written; its
    figures mean nothing. tests/project/test_project_benchmarks.py runs every benchmark
    docs/benchmarks.md cites so."""
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="a run of seconds to check it runs (figures mean nothing): "
        + " ".join(f"--{k.replace('_', '-')} {v}" for k, v in smoke.items()),
    )
    if "--smoke" in sys.argv[1:]:
        parser.set_defaults(**smoke)
    return parser.parse_args()
