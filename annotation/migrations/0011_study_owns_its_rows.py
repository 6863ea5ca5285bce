"""Every study-owned row now names its study (the default one unless given); versions of
consent and instructions, group quotas and image hashes are unique per study; ``active``
gives way to the study's status (0010 carried it over)."""

import django.db.models.deletion
from django.db import migrations, models

import annotation.models.studies

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
        ("annotation", "0010_default_study"),
    ]

    operations = [
        migrations.RemoveField(model_name="study", name="active"),
        *(
            migrations.AlterField(
                model_name=model,
                name="study",
                field=models.ForeignKey(
                    default=annotation.models.studies.default_study_pk,
                    on_delete=django.db.models.deletion.PROTECT,
                    related_name=related,
                    to="annotation.study",
                ),
            )
            for model, related in OWNED.items()
        ),
        migrations.AlterField(
            model_name="consenttext",
            name="version",
            field=models.PositiveIntegerField(),
        ),
        migrations.AlterField(
            model_name="instructions",
            name="version",
            field=models.PositiveIntegerField(),
        ),
        migrations.AlterField(
            model_name="item",
            name="image_sha256",
            field=models.CharField(db_index=True, max_length=64),
        ),
        migrations.RemoveConstraint(model_name="groupquota", name="one_quota_per_group"),
        migrations.AddConstraint(
            model_name="groupquota",
            constraint=models.UniqueConstraint(
                fields=("study", "field", "value"), name="one_quota_per_group_per_study"
            ),
        ),
        migrations.AddConstraint(
            model_name="consenttext",
            constraint=models.UniqueConstraint(
                fields=("study", "version"), name="consent_version_per_study"
            ),
        ),
        migrations.AddConstraint(
            model_name="instructions",
            constraint=models.UniqueConstraint(
                fields=("study", "version"), name="instructions_version_per_study"
            ),
        ),
        migrations.AddConstraint(
            model_name="item",
            constraint=models.UniqueConstraint(
                fields=("study", "image_sha256"), name="one_image_once_per_study"
            ),
        ),
        migrations.AddConstraint(
            model_name="study",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("task_size__isnull", True), ("task_size__gte", 2), _connector="OR"
                ),
                name="study_task_size_at_least_two",
            ),
        ),
        migrations.AddConstraint(
            model_name="study",
            constraint=models.CheckConstraint(
                condition=models.Q(("overlap__isnull", True), ("overlap__gte", 1), _connector="OR"),
                name="study_overlap_at_least_one",
            ),
        ),
    ]
