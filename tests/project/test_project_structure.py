"""The house rules that the code itself can check: light imports, one home for tasks,
a library that reads no environment."""

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "scipy", "sentence_transformers", "matplotlib", "transformers")

PROBE = """
import json, os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "web.settings")
import django
django.setup()
from django.core.management import get_commands, load_command_class
from django.urls import get_resolver
get_resolver().url_patterns  # the whole URL conf, every view module imported
for name, app in get_commands().items():
    if app == "annotation":
        load_command_class(app, name)
print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)))
"""


def test_the_url_conf_and_the_annotation_commands_leave_torch_out():
    """manage.py check, the portal and the annotation commands load no model code."""
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def _python_files(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def test_training_ml_reads_no_environment_variable():
    for path in _python_files("training/ml"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in {"environ", "getenv"}:
                raise AssertionError(f"{path.relative_to(ROOT)}:{node.lineno} reads os.{node.attr}")


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_services_never_import_the_task_module():
    """Tasks call services; services queue tasks by name, so there is no cycle."""
    for path in _python_files("training") + _python_files("annotation"):
        if path.name != "tasks.py" and "management" not in path.parts:
            assert "training.tasks" not in _imports(path), path


def test_every_celery_task_lives_in_a_tasks_module():
    for folder in ("training", "annotation", "web"):
        for path in _python_files(folder):
            if path.name == "tasks.py":
                continue
            source = path.read_text()
            assert "@shared_task" not in source and "@app.task" not in source, path
