"""What a retraining schedule asks for: its beat task's name and its settings (stored as
the task's JSON kwargs; staff edit them as fields in the admin, ``training.admin``).

A module of its own, below ``training.schedules``, so that the public surface
(``training.services``, ``training.selectors``) can name them without importing the
scheduled step, which imports both.
"""

from dataclasses import dataclass, fields

from training.errors import ScheduleError
from training.ml.recipes import DEFAULT_RECIPE, RECIPES, choices

PROMOTION_POLICIES = ("manual", "auto")
TASK_NAME = "training.scheduled_retrain"


@dataclass(frozen=True)
class ScheduleSettings:
    """What one schedule asks for; defaults are the seed's."""

    min_new_rankings: int = 50
    promotion: str = "manual"
    encoder: str = ""  # empty: settings.TRAINING["DEFAULT_ENCODER"]
    recipe: str = ""  # a name of training.ml.recipes; empty: its DEFAULT_RECIPE
    epochs: int = 12
    paraphrases: int = 8
    include_synthetic: bool = False
    # Group-aware promotion (``training.perspectives.group_check``): with fields named,
    # ``auto`` also keeps a version when a group of one of them clearly loses more than the
    # margin.
    group_fields: tuple[str, ...] = ()
    group_margin: float = 0.02
    search: bool = False  # choose the recipe by grouped CV first (training.runs.search)
    # The collection studies (slugs) it counts new rankings of and snapshots; empty: the
    # default study. A validation study is refused when the step runs.
    studies: tuple[str, ...] = ()

    @classmethod
    def from_kwargs(cls, kwargs: dict) -> "ScheduleSettings":
        """Validate a PeriodicTask's kwargs; unknown keys and bad values are refused."""
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(kwargs) - set(known))
        if unknown:
            raise ScheduleError(
                f"Unknown schedule setting(s): {', '.join(unknown)}; known: {', '.join(known)}."
            )
        values = {}
        for name, value in kwargs.items():
            default = known[name].default
            if name in ("group_fields", "studies"):
                if not isinstance(value, list | tuple) or not all(
                    isinstance(v, str) and v.strip() for v in value
                ):
                    what = "field keys" if name == "group_fields" else "study slugs"
                    raise ScheduleError(f"{name} must be a list of {what}: {value!r}.")
                value = tuple(v.strip() for v in value)
            elif name == "group_margin":
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise ScheduleError(f"group_margin must be a number, not {value!r}.")
                value = float(value)
            elif isinstance(default, bool):
                if not isinstance(value, bool):
                    raise ScheduleError(f"{name} must be true or false, not {value!r}.")
            elif isinstance(default, int):
                if isinstance(value, bool) or not isinstance(value, int):
                    raise ScheduleError(f"{name} must be a whole number, not {value!r}.")
            elif not isinstance(value, str):
                raise ScheduleError(f"{name} must be a string, not {value!r}.")
            values[name] = value
        settings = cls(**values)
        if settings.min_new_rankings < 1:
            raise ScheduleError("min_new_rankings must be at least 1.")
        if settings.epochs < 1:
            raise ScheduleError("epochs must be at least 1.")
        if settings.paraphrases < 0:
            raise ScheduleError("paraphrases must be 0 or more.")
        if not 0 <= settings.group_margin < 1:
            raise ScheduleError("group_margin must be from 0 up to 1 (alignment is in [0, 1]).")
        if settings.recipe and settings.recipe not in RECIPES:
            known = ", ".join(name for name, _ in choices())  # the default first
            raise ScheduleError(
                f"recipe must be one of {known} (empty: the default, "
                f"{DEFAULT_RECIPE}), not {settings.recipe!r}."
            )
        if settings.promotion not in PROMOTION_POLICIES:
            raise ScheduleError(
                f"promotion must be one of {', '.join(PROMOTION_POLICIES)}, "
                f"not {settings.promotion!r}."
            )
        return settings
