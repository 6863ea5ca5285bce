"""A study becomes the unit a lab runs: its kind, status, task size and overlap, and a
(for now nullable) study on every row it owns; 0010 fills them, 0011 makes them required."""

import django.db.models.deletion
from django.db import migrations, models

OWNED = {
    "item": "items",
    "rankingtask": "tasks",
    "consenttext": "consent_texts",
    "instructions": "instructions",
    "groupquota": "quotas",
    "annotatorprofile": "annotators",
}


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0008_validation_conditions"),
    ]

    operations = [
        migrations.AddField(
            model_name="study",
            name="kind",
            field=models.CharField(
                choices=[
                    ("collection", "Collection (rankings become training labels)"),
                    ("validation", "Validation (rankings judge conditions, never labels)"),
                ],
                default="collection",
                max_length=20,
            ),
        ),
        migrations.AddField(
            model_name="study",
            name="status",
            field=models.CharField(
                choices=[
                    ("draft", "Draft"),
                    ("open", "Open"),
                    ("closed", "Closed"),
                    ("archived", "Archived"),
                ],
                default="open",
                help_text="Only an open study admits participants and serves tasks.",
                max_length=20,
            ),
        ),
        migrations.AddField(
            model_name="study",
            name="task_size",
            field=models.PositiveSmallIntegerField(
                blank=True, help_text="Items per task; blank: STEREORANK_TASK_SIZE.", null=True
            ),
        ),
        migrations.AddField(
            model_name="study",
            name="overlap",
            field=models.PositiveSmallIntegerField(
                blank=True,
                help_text="Rankings per task; blank: STEREORANK_TASK_OVERLAP.",
                null=True,
            ),
        ),
        *(
            migrations.AddField(
                model_name=model,
                name="study",
                field=models.ForeignKey(
                    null=True,
                    on_delete=django.db.models.deletion.PROTECT,
                    related_name=related,
                    to="annotation.study",
                ),
            )
            for model, related in OWNED.items()
        ),
    ]
