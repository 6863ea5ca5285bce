"""Scripts run as ``python SCRIPT ARGS`` would run them, each in a process of its own, forked
from one interpreter that imported the heavy libraries once (torch, sentence-transformers,
transformers, scipy): a script's process then starts in milliseconds instead of the
seconds those imports take. The test of every benchmark's smoke run uses it.

What differs from a fresh ``python``: those modules are already imported (with the
environment the preloader started with: the same offline and thread settings), so a
script must not need them imported under another environment; everything else (the
environment, the working folder, ``sys.argv``, ``sys.path[0]``, ``__main__``, the exit
status, the output) is the script's own. The preloader holds no threads when it forks.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

PRELOAD = (
    "numpy",
    "scipy.stats",
    "scipy.optimize",
    "torch",
    "transformers",
    "sentence_transformers",
)

_SERVER = r"""
import importlib, json, os, runpy, sys, threading, traceback
for name in sys.argv[1:]:
    importlib.import_module(name)
assert threading.active_count() == 1, "the preloader must hold no threads when it forks"
print("ready", flush=True)
for line in sys.stdin:
    job = json.loads(line)
    pid = os.fork()
    if pid:
        print(json.dumps({"pid": pid}), flush=True)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"status": os.waitstatus_to_exitcode(status)}), flush=True)
        continue
    os.setsid()
    os.chdir(job["cwd"])
    os.environ.clear()
    os.environ.update(job["env"])
    for fd, path in ((1, job["stdout"]), (2, job["stderr"])):
        os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), fd)
    stdin = os.open(os.devnull, os.O_RDONLY)
    os.dup2(stdin, 0)
    sys.stdin = open(0, closefd=False)
    sys.stdout = open(1, "w", closefd=False)
    sys.stderr = open(2, "w", closefd=False)
    sys.argv = job["argv"]
    sys.path[0] = os.path.dirname(os.path.abspath(job["argv"][0]))
    code = 0
    try:
        runpy.run_path(job["argv"][0], run_name="__main__")
    except SystemExit as stop:
        code = stop.code
    except BaseException:
        traceback.print_exc()
        code = 1
    raise SystemExit(code)  # out of the loop: atexit handlers run, output is flushed
"""


class Preloader:
    """One preloading interpreter; ``run`` a script in a fork of it."""

    def __init__(self, env: dict[str, str], cwd: Path):
        self.process = subprocess.Popen(
            [sys.executable, "-c", _SERVER, *PRELOAD],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        if self._line(timeout=120) != "ready":
            raise RuntimeError("the preloader did not start")

    def _line(self, timeout: float) -> str:
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        if not ready:
            raise TimeoutError
        return self.process.stdout.readline().strip()

    def run(
        self, argv: list[str], env: dict[str, str], cwd: Path, folder: Path, timeout: float
    ) -> subprocess.CompletedProcess:
        """``python *argv`` (``argv[0]`` the script) in ``cwd`` with exactly ``env``; its
        output in files under ``folder``. A run past ``timeout`` is killed (its process
        group: what it started too) and fails the same way ``subprocess.run`` would."""
        out, err = folder / "stdout", folder / "stderr"
        job = {"argv": argv, "env": env, "cwd": str(cwd), "stdout": str(out), "stderr": str(err)}
        self.process.stdin.write(json.dumps(job) + "\n")
        self.process.stdin.flush()
        pid = json.loads(self._line(timeout=30))["pid"]
        try:
            status = json.loads(self._line(timeout=timeout))["status"]
        except TimeoutError:
            os.killpg(pid, signal.SIGKILL)
            self._line(timeout=30)
            raise subprocess.TimeoutExpired(argv, timeout) from None
        return subprocess.CompletedProcess(argv, status, out.read_text(), err.read_text())

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=30)
