import json
from pathlib import Path

from django.db import migrations, models


def describe_past_thresholds(apps, schema_editor):
    """Versions before the basis was kept: what their manifest says, else 'not recorded'."""
    Checkpoint = apps.get_model("training", "Checkpoint")
    for checkpoint in Checkpoint.objects.all():
        try:
            extra = json.loads((Path(checkpoint.path) / "manifest.json").read_text())["extra"]
        except (OSError, ValueError, KeyError, TypeError):
            extra = {}
        calibration = extra.get("calibration") or {}
        if calibration.get("method") == "kde-crossing":
            basis = "KDE crossing (registered before the basis was recorded)"
        elif calibration.get("reason"):
            basis = f"seed default {checkpoint.threshold}: {calibration['reason']}"
        elif extra.get("imported_from"):
            basis = f"seed default {checkpoint.threshold}: imported, no threshold in the file"
        else:
            basis = f"{checkpoint.threshold}: not recorded (registered before the basis was kept)"
        checkpoint.threshold_basis = basis
        checkpoint.save(update_fields=["threshold_basis"])


class Migration(migrations.Migration):
    dependencies = [
        ("training", "0002_actor_and_cancelled_by"),
    ]

    operations = [
        migrations.AddField(
            model_name="checkpoint",
            name="threshold_basis",
            field=models.TextField(
                blank=True, help_text="How the threshold was set: calibrated on what, or why not."
            ),
        ),
        migrations.RunPython(describe_past_thresholds, migrations.RunPython.noop),
    ]
