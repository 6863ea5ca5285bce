"""The locks agree with pyproject.toml: requirements/runtime.txt (the Dockerfile, bin/run)
and requirements/test.txt (bin/test, .ci/run), made by bin/lock with pip-tools and
installed with --require-hashes --no-deps.

A change to pyproject.toml's dependencies, extras or build requirements without bin/lock
fails here: every requirement a lock covers is pinned in it at a version its specifier
allows, and nothing the lock pins "via stereorank (pyproject.toml)" is gone from the
pyproject. Every pin carries its files' hashes (pip refuses a file whose hash is not
listed); torch, the seed encoder's parts and CUDA packages stay out (they come from
requirements/torch.txt and requirements/seed-encoder.txt); each header records the
pip-compile command bin/lock runs. File reading only, no network.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.project.compose_stack import dockerfile_instructions

ROOT = Path(__file__).resolve().parents[2]
REQUIREMENTS = ROOT / "requirements"
# Each lock, and the extras of stereorank it holds beside the dependencies.
# The runtime lock holds the quant extra: the image and bin/run can serve an int8 copy; the
# release extra (datasets, for manage.py export_dataset) is the test lock's only.
LOCKS = {
    "runtime.txt": {"minilm", "quant"},
    "test.txt": {"minilm", "test", "quant", "release"},
}
VIA_PYPROJECT = "stereorank (pyproject.toml)"
VIA_BUILD = "stereorank (pyproject.toml::build-system.requires)"
PIN = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+) \\")
HASH = re.compile(r" {4}--hash=sha256:[0-9a-f]{64}( \\)?")
VIA = re.compile(r" {4}# via(?: (.+))?| {4}# {3}(.+)")


@dataclass
class Pin:
    version: str
    hashes: int = 0
    via: set[str] = field(default_factory=set)


@dataclass
class Lock:
    command: list[str]
    pins: dict[str, Pin]


def parse_lock(text: str) -> Lock:
    """pip-compile's output: the command in its header, each pin with its hashes and the
    requirements that pulled it. Any other line (a requirement without ``==``, hashes or
    both, an editable, a URL, an option) is refused: pip would install it unchecked or not
    at all."""
    command, pins, current = [], {}, None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if line.startswith("#"):  # the header, or the unpinned packages named after the pins
            if line.startswith("#    pip-compile ") and not pins:
                command = shlex.split(line[1:])
            current = None
            continue
        pin, hashed, via = PIN.fullmatch(line), HASH.fullmatch(line), VIA.fullmatch(line)
        if pin:
            current = pins[canonicalize_name(pin[1])] = Pin(pin[2])
        elif hashed and current:
            current.hashes += 1
        elif via and current:
            current.via |= {v for v in via.groups() if v}
        else:
            raise ValueError(f"line {number} is no hashed pin: {line!r}")
    return Lock(command, pins)


def _lock(name: str) -> Lock:
    return parse_lock((REQUIREMENTS / name).read_text())


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _requirements(extras: set[str]) -> list[Requirement]:
    """The dependencies and those of ``extras``, stereorank[...] followed, for this
    interpreter (the locks are made for Linux and Python 3.11, as the tests run)."""
    project = _pyproject()["project"]
    found = [Requirement(r) for r in project["dependencies"]]
    todo, seen = list(extras), set()
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for text in project["optional-dependencies"][extra]:
            requirement = Requirement(text)
            if canonicalize_name(requirement.name) == "stereorank":
                todo.extend(requirement.extras)
            else:
                found.append(requirement)
    return [r for r in found if r.marker is None or r.marker.evaluate()]


def _disagreements(requirements: list[Requirement], lock: Lock, name: str) -> list[str]:
    problems = []
    for requirement in requirements:
        pin = lock.pins.get(canonicalize_name(requirement.name))
        if pin is None:
            problems.append(f"{requirement}: not in requirements/{name}")
        elif not requirement.specifier.contains(pin.version, prereleases=True):
            problems.append(f"{requirement}: requirements/{name} pins {pin.version}")
    return problems


def _torch_pin(name: str) -> Version:
    lines = [ln.split("#")[0].strip() for ln in (REQUIREMENTS / name).read_text().splitlines()]
    (pin,) = [ln for ln in lines if ln]
    package, _, version = pin.partition("==")
    assert package == "torch", pin
    return Version(version)


@pytest.mark.parametrize("name", LOCKS)
def test_every_requirement_is_pinned_at_a_version_it_allows(name):
    requirements = [r for r in _requirements(LOCKS[name]) if r.name != "torch"]
    problems = _disagreements(requirements, _lock(name), name)
    assert not problems, "pyproject.toml and the lock disagree (run bin/lock):\n" + "\n".join(
        problems
    )


@pytest.mark.parametrize("name", LOCKS)
def test_nothing_is_pinned_for_a_requirement_pyproject_dropped(name):
    lock = _lock(name)
    named = {canonicalize_name(r.name) for r in _requirements(LOCKS[name])}
    direct = {n for n, pin in lock.pins.items() if VIA_PYPROJECT in pin.via}
    assert direct, "the lock names no pin as pyproject's: not made by bin/lock?"
    assert not direct - named, f"pinned for pyproject, not in it (run bin/lock): {direct - named}"
    build = [Requirement(r) for r in _pyproject()["build-system"]["requires"]]
    assert not _disagreements(build, lock, name)
    for_build = {n for n, pin in lock.pins.items() if VIA_BUILD in pin.via}
    assert for_build == {canonicalize_name(r.name) for r in build}


@pytest.mark.parametrize("name", LOCKS)
def test_every_pin_has_its_hashes_and_no_line_is_anything_else(name):
    lock = _lock(name)  # parse_lock refuses any other line
    assert len(lock.pins) > 50
    assert not [n for n, pin in lock.pins.items() if not pin.hashes]


@pytest.mark.parametrize(
    "tampered",
    [
        "django==5.2.20\n",  # no hash: pip would take any file
        "django==5.2.20 \\\n    --hash=sha256:abc\n",  # not a SHA-256
        "django>=5.2\n",  # unpinned
        "-e git+https://example.org/django.git#egg=django\n",
        "django @ https://example.org/django-5.2.20-py3-none-any.whl\n",
        "--extra-index-url https://example.org/simple\n",
    ],
)
def test_a_tampered_lock_is_refused(tampered):
    good = "django==5.2.20 \\\n    --hash=sha256:" + "0" * 64 + "\n    # via stereorank\n"
    assert parse_lock(good).pins["django"].hashes == 1
    with pytest.raises(ValueError, match="is no hashed pin"):
        parse_lock(good + tampered)


@pytest.mark.parametrize("name", LOCKS)
def test_torch_the_seed_parts_and_cuda_packages_stay_out(name):
    pins = set(_lock(name).pins)
    seed = (REQUIREMENTS / "seed-encoder.txt").read_text().splitlines()
    parts = {canonicalize_name(ln.split("==")[0]) for ln in seed if ln and ln[0] != "#"}
    assert len(parts) == 5
    assert not pins & (parts | {"torch", "stereorank", "triton"})
    assert not [p for p in pins if p.startswith("nvidia-")]


@pytest.mark.parametrize("name", LOCKS)
def test_the_header_records_the_command_bin_lock_runs(name):
    command = _lock(name).command
    expected = {
        "pip-compile",
        "--all-build-deps",
        "--constraint=requirements/torch-cpu.txt",
        "--generate-hashes",
        "--no-emit-find-links",
        "--no-emit-index-url",
        f"--output-file=requirements/{name}",
        "--strip-extras",
        "--unsafe-package=stereorank",
        "--unsafe-package=torch",
        "pyproject.toml",
    } | {f"--extra={extra}" for extra in LOCKS[name]}
    if name == "test.txt":  # resolved within the runtime lock's pins
        expected.add("--constraint=requirements/runtime.txt")
    assert set(command) == expected and len(command) == len(expected), command
    script = (ROOT / "bin" / "lock").read_text()
    flags = {word.split("=")[0] for word in expected if word.startswith("--")}
    assert not [flag for flag in flags if flag not in script]


def test_the_test_lock_holds_the_runtime_lock_unchanged():
    runtime, test = _lock("runtime.txt").pins, _lock("test.txt").pins
    moved = {n: (p.version, test[n].version) for n, p in runtime.items() if n in test}
    assert set(runtime) <= set(test)
    assert all(a == b for a, b in moved.values()), moved


def test_torch_is_pinned_alike_everywhere():
    release, cpu = _torch_pin("torch.txt"), _torch_pin("torch-cpu.txt")
    assert cpu.public == str(release) and cpu.local == "cpu"
    (torch,) = [r for r in _requirements(set()) if r.name == "torch"]
    assert torch.specifier.contains(release)


def test_the_image_installs_only_hashed_pins_beyond_torch():
    """Every pip install in the Dockerfile either resolves nothing (--no-deps) or is
    torch's own (requirements/torch.txt, from TORCH_INDEX); the lock's checks hashes;
    pip check ends it."""
    runs = [a for i, a in dockerfile_instructions(ROOT / "Dockerfile") if i == "RUN"]
    commands = [shlex.split(c) for run in runs for c in run.split("&&")]
    installs = [c[2:] for c in commands if c[:2] == ["pip", "install"]]
    for args in installs:
        assert "--no-deps" in args or args[-2:] == ["-r", "requirements/torch.txt"], args
    (lock,) = [a for a in installs if "requirements/runtime.txt" in a]
    assert "--require-hashes" in lock
    (project,) = [run for run in runs if "--no-build-isolation ." in run]
    assert "pip check" in project.split("--no-build-isolation .", 1)[1]


def test_the_image_can_serve_an_int8_copy():
    """The int8 setting the README documents works in the image: the runtime lock, which the
    Dockerfile installs, pins every package of the quant extra."""
    runtime = _lock("runtime.txt").pins
    quant = [r for r in _requirements({"quant"}) if canonicalize_name(r.name) != "torch"]
    assert {canonicalize_name(r.name) for r in quant} >= {"onnxruntime", "openvino", "nncf"}
    assert not _disagreements(quant, _lock("runtime.txt"), "runtime.txt")
    assert all(canonicalize_name(r.name) in runtime for r in quant)
    runs = [a for i, a in dockerfile_instructions(ROOT / "Dockerfile") if i == "RUN"]
    assert any("-r requirements/runtime.txt" in run for run in runs)
