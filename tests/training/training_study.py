"""The small study the training tests share: constants and a catalogue-based builder."""

from __future__ import annotations

import json
from pathlib import Path

from annotation.catalogue import load_catalogue, read_catalogue
from annotation.simulation import simulate
from annotation.tasks_builder import build_tasks

# Few epochs at a higher learning rate than the seed's, so a test run learns something.
FAST = {"epochs": 3, "lr": 1e-2, "n_boot": 100}
ENCODER = "all-MiniLM-L6-v2"


def make_study(
    folder: Path, occupations: int = 12, images: int = 2, annotators: int = 6, seed: int = 0
) -> dict:
    """The catalogue's first ``occupations`` (3 prompts each, ``images`` items per prompt),
    tasks of 6, and synthetic annotators who rank every task once."""
    catalogue = read_catalogue()
    catalogue["occupations"] = catalogue["occupations"][:occupations]
    path = folder / "catalogue.json"
    path.write_text(json.dumps(catalogue))
    load_catalogue(placeholders_per_prompt=images, path=path)
    tasks = build_tasks(size=6, overlap=1, seed=seed)
    per_annotator = -(-tasks // annotators)
    result = simulate(annotators, per_annotator, seed=seed)
    return {"tasks": tasks, **result}
