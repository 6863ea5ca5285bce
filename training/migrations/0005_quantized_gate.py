import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("training", "0002_actor_and_cancelled_by"),
    ]

    operations = [
        migrations.CreateModel(
            name="EncoderGate",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("backend", models.CharField(max_length=20)),
                ("quantization", models.CharField(max_length=20)),
                (
                    "encoder_key",
                    models.CharField(help_text="EncoderIdentity.key of the copy.", max_length=16),
                ),
                (
                    "encoder_identity",
                    models.JSONField(help_text="training.ml.encoders.EncoderIdentity."),
                ),
                ("metrics", models.JSONField()),
                ("passed", models.BooleanField()),
                ("at", models.DateTimeField(auto_now=True)),
                (
                    "checkpoint",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="encoder_gates",
                        to="training.checkpoint",
                    ),
                ),
                (
                    "snapshot",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="training.datasetsnapshot",
                    ),
                ),
            ],
            options={
                "ordering": ["-id"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("checkpoint", "snapshot", "encoder_key"),
                        name="one_gate_per_encoder",
                    )
                ],
            },
        ),
    ]
