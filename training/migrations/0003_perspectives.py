import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("training", "0002_actor_and_cancelled_by"),
    ]

    operations = [
        migrations.CreateModel(
            name="PerspectiveReport",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("field", models.CharField(max_length=50)),
                (
                    "group",
                    models.CharField(
                        help_text="The field's value (self-described).", max_length=200
                    ),
                ),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("computed", "Computed"),
                            ("fewer_than_k", "Fewer than k annotators"),
                        ],
                        max_length=20,
                    ),
                ),
                ("alignment", models.FloatField(blank=True, null=True)),
                ("figures", models.JSONField(blank=True, default=dict)),
                (
                    "checkpoint",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="perspective_reports",
                        to="training.checkpoint",
                    ),
                ),
                (
                    "snapshot",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="perspective_reports",
                        to="training.datasetsnapshot",
                    ),
                ),
            ],
            options={
                "ordering": ["field", "group"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("checkpoint", "snapshot", "field", "group"),
                        name="one_perspective_per_group",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            models.Q(("alignment__isnull", False), ("status", "computed")),
                            models.Q(
                                ("alignment__isnull", True),
                                ("figures", {}),
                                ("status", "fewer_than_k"),
                            ),
                            _connector="OR",
                        ),
                        name="suppressed_groups_have_no_figures",
                    ),
                ],
            },
        ),
        migrations.CreateModel(
            name="PerspectiveSummary",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "field",
                    models.CharField(help_text="annotation.DemographicField key.", max_length=50),
                ),
                (
                    "temperature",
                    models.FloatField(help_text="The checkpoint's training temperature T."),
                ),
                (
                    "k",
                    models.PositiveSmallIntegerField(
                        help_text="Fewest annotators behind a group's figures."
                    ),
                ),
                ("n_boot", models.PositiveIntegerField()),
                ("seed", models.IntegerField()),
                (
                    "n_rankings",
                    models.PositiveIntegerField(help_text="Rankings read (every group and none)."),
                ),
                ("n_annotators", models.PositiveIntegerField()),
                ("friedman", models.JSONField(blank=True, null=True)),
                ("divergence", models.JSONField(blank=True, default=list)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "checkpoint",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="perspective_summaries",
                        to="training.checkpoint",
                    ),
                ),
                (
                    "snapshot",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="perspective_summaries",
                        to="training.datasetsnapshot",
                    ),
                ),
            ],
            options={
                "ordering": ["field"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("checkpoint", "snapshot", "field"), name="one_perspective_summary"
                    )
                ],
            },
        ),
    ]
