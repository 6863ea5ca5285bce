"""The quality library stays usable outside Django (commands, notebooks, dashboards)."""

import subprocess
import sys

MODULES = [
    "agreement",
    "bootstrap",
    "breakdown",
    "gold",
    "policy",
    "position_bias",
    "power",
    "records",
    "validation",
    "validation_report",
    "validation_sim",
    "weights",
]


def test_quality_modules_import_neither_django_nor_torch():
    imports = "; ".join(f"import annotation.stats.{m}" for m in MODULES)
    code = f"import sys; {imports}; print(sorted({{'django', 'torch'}} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
