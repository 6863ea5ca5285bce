"""What the training commands share: lookups and figures (errors: ``web.errors.ServiceCommand``)."""

from __future__ import annotations

import getpass

from django.core.management.base import CommandError

from training.models import DatasetSnapshot


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


def command_actor(command: str) -> str:
    """How a command signs a registry change: the command and the system user who ran it."""
    return f"manage.py {command} ({getpass.getuser()})"
