"""What the training commands share: service errors as one-line CommandErrors, lookups."""

from __future__ import annotations

from contextlib import contextmanager

from django.core.management.base import CommandError

from training.models import DatasetSnapshot


@contextmanager
def service_errors():
    """A service's ValueError (SnapshotError, RunError, RegistryError, ...) exits with its line."""
    try:
        yield
    except ValueError as exc:
        raise CommandError(str(exc)) from exc


def get_snapshot(snapshot_id: int) -> DatasetSnapshot:
    try:
        return DatasetSnapshot.objects.get(pk=snapshot_id)
    except DatasetSnapshot.DoesNotExist:
        raise CommandError(f"there is no snapshot {snapshot_id}") from None


def fmt_rho(metrics: dict) -> str:
    rho, ci = metrics.get("spearman"), metrics.get("spearman_ci")
    if rho is None:
        return "-"
    return f"{rho:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")
