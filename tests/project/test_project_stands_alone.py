"""The project stands alone: its README and docs name nothing outside the repository.

A clone of this repository is all a reader has, so the README and ``docs/*.md`` never
point at a file beside or above it (``../``), at a ``shared/`` folder, or at the design
notes that lived there: the design is ``docs/design.md``.
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

OUTSIDE = {
    "a path above the repository": re.compile(r"(?<![.\w])\.\./"),  # not ``.../api``
    "a shared/ folder": re.compile(r"\bshared/"),
    "the old design file": re.compile(r"DESIGN\.md"),
    "the old reference notes": re.compile(r"anchors-notes"),
}


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def test_readme_and_docs_name_nothing_outside_the_repository():
    found = [
        f"{page.relative_to(ROOT)}:{number}: {what}: {line.strip()}"
        for page in _pages()
        for number, line in enumerate(page.read_text().splitlines(), start=1)
        for what, pattern in OUTSIDE.items()
        if pattern.search(line)
    ]
    assert found == []


def test_the_patterns_tell_outside_paths_from_inside_ones():
    outside = ["`../shared/DESIGN.md`", "see ../other/x.md", "shared/reference/anchors-notes.md"]
    inside = ["`docs/design.md`", ".../api/staff/studies/<slug>/", "shared tasks", "docs/x.md"]
    assert all(any(p.search(t) for p in OUTSIDE.values()) for t in outside)
    assert not any(p.search(t) for p in OUTSIDE.values() for t in inside)


def test_the_readme_points_at_the_design_page():
    assert (ROOT / "docs" / "design.md").is_file()
    assert "`docs/design.md`" in (ROOT / "README.md").read_text()
