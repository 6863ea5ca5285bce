"""The hyper-parameter search's space: a plain grid, its spec and its checks (no torch).

A grid, not a sampler such as Optuna's TPE: every configuration of a fold trains
at once as one batch of heads (``training.ml.search``), so 144 configurations
cost little more than one; a grid is deterministic (the same snapshot and seed
choose the same recipe on any machine, with nothing to persist between trials);
and it shows the whole surface on the run page, not the path a sampler took.

A spec names the values of some keys and keeps the default grid for the rest:
``"lr=1e-3,1e-2 epochs=4,12 folds=3"`` (keys separated by spaces or ``;``), or
the same as a dict of lists (the API). ``True`` (or ``""``) is the default grid.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass, fields

from training.ml.errors import MLError

MAX_CONFIGS = 1000


class SearchSpecError(MLError, ValueError):
    """A spec this module cannot read, or values out of range (also a ``ValueError``)."""


def _positive(v: float) -> bool:
    return math.isfinite(v) and v > 0


def _non_negative(v: float) -> bool:
    return math.isfinite(v) and v >= 0


# key: (type, check, what the check means); the order is the grid's.
_KEYS = {
    "lr": (float, _positive, "finite and > 0"),
    "epochs": (int, lambda v: 1 <= v <= 200, "a whole number from 1 to 200"),
    "alpha": (float, _non_negative, "finite and >= 0"),
    "temperature": (float, _positive, "finite and > 0"),
    "weight_decay": (float, _non_negative, "finite and >= 0"),
}


@dataclass(frozen=True)
class SearchSpace:
    """The values tried for each hyper-parameter, and the number of CV folds.

    The default grid (4 x 3 x 3 x 2 x 2 = 144 configurations) holds the
    ``standard`` recipe (lr 1e-2, 12 epochs, alpha 0.01, T 0.5, weight decay 0.01).
    alpha stays above 0: the listwise term ignores a shift of all scores, so without
    the MSE term nothing anchors the bias (Adam then moves it on float noise) and the
    scores leave the labels' [0, 1] scale the flagging threshold is calibrated on.
    """

    lr: tuple[float, ...] = (1e-3, 3e-3, 1e-2, 3e-2)
    epochs: tuple[int, ...] = (4, 8, 12)
    alpha: tuple[float, ...] = (0.01, 0.1, 1.0)
    temperature: tuple[float, ...] = (0.25, 0.5)
    weight_decay: tuple[float, ...] = (0.0, 0.01)
    folds: int = 5

    def __post_init__(self) -> None:
        for key, (kind, ok, meaning) in _KEYS.items():
            values = getattr(self, key)
            if not values:
                raise SearchSpecError(f"search: {key} needs at least one value")
            if len(set(values)) != len(values):
                raise SearchSpecError(f"search: {key} repeats a value")
            for v in values:
                if isinstance(v, bool) or not isinstance(v, int | float) or not ok(kind(v)):
                    raise SearchSpecError(f"search: {key}={v!r} must be {meaning}")
                if kind is int and v != int(v):
                    raise SearchSpecError(f"search: {key}={v!r} must be {meaning}")
        if isinstance(self.folds, bool) or not isinstance(self.folds, int) or self.folds < 2:
            raise SearchSpecError(f"search: folds={self.folds!r} must be a whole number >= 2")
        if self.size > MAX_CONFIGS:
            raise SearchSpecError(
                f"search: {self.size} configurations, more than {MAX_CONFIGS}; name fewer values"
            )

    @property
    def size(self) -> int:
        return math.prod(len(getattr(self, key)) for key in _KEYS)

    def configs(self) -> list[dict]:
        """Every configuration, in grid order (lr slowest, weight decay fastest)."""
        axes = [[_KEYS[k][0](v) for v in getattr(self, k)] for k in _KEYS]
        return [dict(zip(_KEYS, values, strict=True)) for values in itertools.product(*axes)]

    def to_dict(self) -> dict:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @classmethod
    def parse(cls, spec: str) -> SearchSpace:
        """``"lr=1e-3,1e-2 epochs=4,12 folds=3"``; ``SearchSpecError`` naming what is wrong."""
        values: dict[str, list[str]] = {}
        for token in spec.replace(";", " ").split():
            key, sep, listed = token.partition("=")
            if not sep or not listed:
                raise SearchSpecError(f"search: {token!r} is not KEY=V1,V2 (e.g. lr=1e-3,1e-2)")
            values[key] = [v for v in listed.split(",") if v]
        return cls.from_dict(values)

    @classmethod
    def from_dict(cls, values: dict) -> SearchSpace:
        """Lists (or numbers, or their text) by key; the default grid for keys not named."""
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise SearchSpecError(f"search: unknown key {unknown[0]!r}: use {', '.join(known)}")
        kwargs = {}
        for key, raw in values.items():
            kind = int if key in ("epochs", "folds") else float
            items = raw if isinstance(raw, list | tuple) else [raw]
            try:
                parsed = tuple(_number(v, kind) for v in items)
            except (TypeError, ValueError, OverflowError):
                raise SearchSpecError(
                    f"search: {key} must be {'whole ' if kind is int else ''}numbers, not {raw!r}"
                ) from None
            kwargs[key] = parsed[0] if key == "folds" and len(parsed) == 1 else parsed
        return cls(**kwargs)

    @classmethod
    def from_value(cls, value) -> SearchSpace | None:
        """What a run's ``search`` option holds: False/None (no search), True or ``""``
        (the default grid), a spec string or a dict."""
        if value is None or value is False:
            return None
        if value is True:
            return cls()
        if isinstance(value, str):
            return cls.parse(value)
        if isinstance(value, dict):
            return cls.from_dict(value)
        raise SearchSpecError(f"search must be true, a spec string or an object, not {value!r}")


def _number(v, kind):
    if isinstance(v, bool):
        raise TypeError("a boolean is not a number")
    number = float(v) if isinstance(v, str) else v
    if not isinstance(number, int | float):
        raise TypeError(f"{v!r} is not a number")
    if kind is int:
        if float(number) != int(number):
            raise ValueError(f"{v!r} is not whole")
        return int(number)
    return float(number)
