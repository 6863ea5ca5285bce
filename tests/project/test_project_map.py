"""docs/architecture.md is the map of the code: it names every module, and names none
that does not exist; a module past 400 lines says why in its docstring."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("core", "web", "annotation", "training", "scoring", "benchmarks")
MAP = ROOT / "docs" / "architecture.md"
LONG = 400
# A module past LONG lines carries this phrase in its docstring, with the reason after it.
LONG_REASON = "Past 400 lines because"


def _defines_something(path: Path) -> bool:
    """A package marker that holds code (a function or class) is a module of its own."""
    tree = ast.parse(path.read_text())
    return any(isinstance(n, ast.FunctionDef | ast.ClassDef) for n in tree.body)


def _modules() -> set[str]:
    """Every Python module of the project's code: migrations, package markers and
    management commands aside (commands are named by their command names)."""
    found = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            rel = path.relative_to(ROOT)
            if "migrations" in rel.parts:
                continue
            if "commands" in rel.parts and not path.stem.startswith("_"):
                continue
            if path.name == "__init__.py" and not _defines_something(path):
                continue
            found.add(rel.as_posix())
    return found


def _commands() -> set[str]:
    return {
        f"{path.parts[-4]}:{path.stem}"
        for path in ROOT.glob("*/management/commands/*.py")
        if not path.stem.startswith("_") and path.relative_to(ROOT).parts[0] in PACKAGES
    }


def _named_modules(text: str) -> set[str]:
    pattern = r"`((?:" + "|".join(PACKAGES) + r")/[\w/]+\.py)`"
    commands = re.compile(r"/management/commands/[a-z]")
    return {m for m in re.findall(pattern, text) if not commands.search(m)}


def _named_commands(text: str) -> set[str]:
    named = set()
    for line in text.splitlines():
        m = re.match(r"- `(\w+)/management/commands/`:(.*)", line)
        if m:
            named.update(f"{m.group(1)}:{c}" for c in re.findall(r"`(\w+)`", m.group(2)))
    return named


def test_the_map_names_every_module_and_nothing_else():
    text = MAP.read_text()
    named, modules = _named_modules(text), _modules()
    assert not modules - named, f"modules the map does not name: {sorted(modules - named)}"
    assert not named - modules, f"named, not found: {sorted(named - modules)}"


def test_the_map_names_every_management_command():
    named, commands = _named_commands(MAP.read_text()), _commands()
    assert not commands - named, f"commands the map does not name: {sorted(commands - named)}"
    assert not named - commands, f"named, not found: {sorted(named - commands)}"


def test_a_module_past_400_lines_says_why():
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            source = path.read_text()
            if source.count("\n") > LONG:
                doc = ast.get_docstring(ast.parse(source)) or ""
                assert LONG_REASON in doc, (
                    f"{path.relative_to(ROOT)}: {source.count(chr(10))} lines"
                )
