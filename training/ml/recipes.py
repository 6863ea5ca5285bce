"""Training recipes: named hyper-parameter sets, the one home of their values.

``seed`` is the model card's recipe, kept by name to reproduce it: at learning
rate 1e-5 a freshly initialised head barely moves in 2-12 epochs (eval rho
0.431 against 0.696 at 1e-2 on the seed-scale study, docs/benchmarks.md), so
every short run scores like its initialisation. ``standard``, the default, is
the seed's recipe at 1e-2: it learns in the first epoch. A run records the
recipe it started from beside the hyper-parameters it used (any override shows
there). Plain data, no torch: the API and the dashboards read it for their forms.
"""

from __future__ import annotations

SEED = "seed"
STANDARD = "standard"

_SEED_VALUES: dict[str, float | int] = {
    "epochs": 12,
    "lr": 1e-5,
    "weight_decay": 0.01,
    "temperature": 0.5,
    "alpha": 0.01,
    "dropout": 0.1,
    "occupations_per_batch": 1,
}

RECIPES: dict[str, dict[str, float | int]] = {
    SEED: _SEED_VALUES,
    STANDARD: {**_SEED_VALUES, "lr": 1e-2},
}
DESCRIPTIONS: dict[str, str] = {
    SEED: "the model card's (lr 1e-5): reproduces the card; barely learns in a few epochs",
    STANDARD: "the card's at lr 1e-2: learns in the first epoch",
}
DEFAULT_RECIPE = STANDARD


def recipe(name: str) -> dict[str, float | int]:
    """The hyper-parameters of recipe ``name``; ``ValueError`` naming the known ones."""
    try:
        return dict(RECIPES[name])
    except KeyError:
        known = ", ".join(RECIPES)
        raise ValueError(f"unknown recipe {name!r}: use one of {known}") from None


def choices() -> list[tuple[str, str]]:
    """(name, "name: description") for forms, the default first."""
    order = [DEFAULT_RECIPE] + [n for n in RECIPES if n != DEFAULT_RECIPE]
    return [(n, f"{n}: {DESCRIPTIONS[n]}") for n in order]
