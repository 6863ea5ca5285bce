"""Import sources with their basis, batches by file hash, imported annotators (issue 42)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("annotation", "0024_minimum_in_format"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="ImportBatch",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("file_sha256", models.CharField(max_length=64)),
                (
                    "file_name",
                    models.CharField(help_text="The file's name as given.", max_length=255),
                ),
                (
                    "rankings",
                    models.PositiveIntegerField(default=0, help_text="Rankings this file added."),
                ),
                (
                    "annotators",
                    models.PositiveIntegerField(default=0, help_text="Annotators it added."),
                ),
                ("tasks", models.PositiveIntegerField(default=0, help_text="Tasks it created.")),
                (
                    "skipped",
                    models.PositiveIntegerField(
                        default=0,
                        help_text="Answers not imported: cancelled, drafts, no ranking, or a task their annotator had answered already.",
                    ),
                ),
                ("imported_at", models.DateTimeField(auto_now_add=True)),
                (
                    "imported_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "study",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="import_batches",
                        to="annotation.study",
                    ),
                ),
            ],
            options={
                "verbose_name_plural": "import batches",
                "ordering": ["-imported_at"],
            },
        ),
        migrations.CreateModel(
            name="ImportSource",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "tool",
                    models.CharField(
                        choices=[
                            ("label-studio", "Label Studio"),
                            ("argilla", "Argilla"),
                            ("potato", "Potato"),
                        ],
                        max_length=20,
                    ),
                ),
                (
                    "name",
                    models.CharField(
                        help_text="The source study, named as its owners name it.", max_length=300
                    ),
                ),
                (
                    "basis",
                    models.TextField(
                        blank=True,
                        help_text="The owner's statement that the source study's consent covers this use.",
                    ),
                ),
                ("basis_recorded_at", models.DateTimeField(blank=True, null=True)),
                ("basis_withdrawn_at", models.DateTimeField(blank=True, null=True)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "basis_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="basis recorded by",
                    ),
                ),
                (
                    "study",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="import_sources",
                        to="annotation.study",
                    ),
                ),
            ],
            options={
                "ordering": ["study_id", "tool", "name"],
            },
        ),
        migrations.CreateModel(
            name="ImportedAnnotator",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "source_hash",
                    models.CharField(
                        blank=True,
                        help_text="Keyed hash of the source's id; blank once erased.",
                        max_length=64,
                    ),
                ),
                (
                    "batch",
                    models.ForeignKey(
                        help_text="The first to bring them.",
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="imports.importbatch",
                    ),
                ),
                (
                    "profile",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="imported",
                        to="annotation.annotatorprofile",
                    ),
                ),
                (
                    "source",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="annotators",
                        to="imports.importsource",
                    ),
                ),
            ],
        ),
        migrations.AddField(
            model_name="importbatch",
            name="source",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="batches",
                to="imports.importsource",
            ),
        ),
        migrations.AddConstraint(
            model_name="importsource",
            constraint=models.UniqueConstraint(
                fields=("study", "tool", "name"), name="one_source_per_name"
            ),
        ),
        migrations.AddConstraint(
            model_name="importsource",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("basis", ""), ("basis_recorded_at__isnull", True)),
                    models.Q(
                        models.Q(("basis", ""), _negated=True), ("basis_recorded_at__isnull", False)
                    ),
                    _connector="OR",
                ),
                name="basis_recorded_with_its_statement",
            ),
        ),
        migrations.AddConstraint(
            model_name="importsource",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("basis_withdrawn_at__isnull", True),
                    ("basis_recorded_at__isnull", False),
                    _connector="OR",
                ),
                name="basis_withdrawn_only_once_recorded",
            ),
        ),
        migrations.AddConstraint(
            model_name="importedannotator",
            constraint=models.UniqueConstraint(
                condition=models.Q(("source_hash", ""), _negated=True),
                fields=("source", "source_hash"),
                name="one_profile_per_source_person",
            ),
        ),
        migrations.AddConstraint(
            model_name="importbatch",
            constraint=models.UniqueConstraint(
                fields=("study", "file_sha256"), name="one_file_once_per_study"
            ),
        ),
    ]
