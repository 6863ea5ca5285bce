"""Scheduled retraining: the policy, the scheduled step and its Celery beat task.

A schedule is a django-celery-beat ``PeriodicTask`` running
``training.scheduled_retrain``; its settings are the task's JSON kwargs
(``min_new_rankings``, ``promotion``, ``encoder``, ``epochs``, ``paraphrases``,
``include_synthetic``), so staff edit them on the admin's periodic-task pages.

Each step first settles the runs this schedule started that have finished
(promotion policy: ``manual`` leaves the new version a candidate, ``auto``
promotes it only when its paired comparison against the active version on the
new snapshot has a 95% interval above zero), then decides whether to retrain.
Every decision is a ``RetrainDecision`` row with its reason.

Never two retrainings at once: the decision and the start of a run happen in one
transaction holding a PostgreSQL advisory transaction lock
(``pg_advisory_xact_lock``), so concurrent steps, in any worker process or on
any host, decide one after the other and the later one sees the earlier one's
run as running. The lock is the database's: it is released when the
transaction ends or its connection dies (a killed worker cannot leave it held),
and no timeout has to outlast the longest run, because a run in progress is
seen as a non-terminal ``TrainingRun`` row, not as a held lock. On SQLite (the
embedded mode) writers are already serialised (``transaction_mode=IMMEDIATE``).
"""

from dataclasses import dataclass, fields

PROMOTION_POLICIES = ("manual", "auto")
# Arbitrary constant naming the advisory lock; any other user of
# pg_advisory_xact_lock in this database must pick a different one.
RETRAIN_LOCK_KEY = 0x5354_5252  # "STRR"


class ScheduleError(ValueError):
    """A schedule's settings are unusable; the message says which and why."""


@dataclass(frozen=True)
class ScheduleSettings:
    """What one schedule asks for; defaults are the seed's."""

    min_new_rankings: int = 50
    promotion: str = "manual"
    encoder: str = ""  # empty: settings.TRAINING["DEFAULT_ENCODER"]
    epochs: int = 12
    paraphrases: int = 8
    include_synthetic: bool = False

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
            if isinstance(default, bool):
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
        if settings.promotion not in PROMOTION_POLICIES:
            raise ScheduleError(
                f"promotion must be one of {', '.join(PROMOTION_POLICIES)}, "
                f"not {settings.promotion!r}."
            )
        return settings


@dataclass(frozen=True)
class Decision:
    """One decision of the policy: ``retrain``, ``skip``, ``promote`` or ``keep``."""

    decision: str
    reason: str


def retrain_decision(
    new_rankings: int, running_run_id: int | None, settings: ScheduleSettings
) -> Decision:
    """Retrain only with at least M new rankings and no retraining already running."""
    if running_run_id is not None:
        return Decision("skip", f"a retraining is already running (run {running_run_id})")
    need = settings.min_new_rankings
    if new_rankings < need:
        noun = "ranking" if new_rankings == 1 else "rankings"
        return Decision("skip", f"only {new_rankings} new {noun}, need {need}")
    return Decision("retrain", f"{new_rankings} new rankings (need {need})")


def promotion_decision(
    promotion: str, version: int, comparison: dict | None, active_version: int | None
) -> Decision:
    """After a run: promote or keep the new version, by the schedule's policy.

    ``comparison`` is the paired comparison new - active on the new snapshot
    (``rho_a``, ``rho_b``, ``diff``, ``ci``, ``p_value``); None when there is no
    active version.
    """
    if promotion == "manual":
        return Decision("keep", f"promotion is manual; version {version} left as a candidate")
    if active_version is None:
        return Decision("promote", f"no active version; version {version} promoted")
    if comparison is None:
        raise ValueError("auto promotion against an active version needs a comparison")
    ci = comparison.get("ci")
    figures = (
        f"rho {comparison['rho_a']:.3f} vs {comparison['rho_b']:.3f} (version {active_version}), "
        f"diff {comparison['diff']:+.3f}"
    )
    if not ci:
        return Decision("keep", f"{figures}, no interval could be computed")
    interval = f"95% CI [{ci[0]:+.3f}, {ci[1]:+.3f}]"
    if ci[0] > 0:
        return Decision("promote", f"{figures}, {interval} above zero")
    return Decision("keep", f"{figures}, {interval} not above zero")
