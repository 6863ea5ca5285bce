"""Drops three foreign keys' own indexes that a composite index already leads with (each
was one more write per reservation or ranking on the portal's hot path). Only the indexes
go: the constraints stay as they are (AlterField would drop and re-add them, checking
every row again)."""

import django.db.models.deletion
from django.db import migrations, models


INDEXES = [
    ("annotation_assignment_task_id_10ae8b7e", "annotation_assignment", "task_id"),
    ("annotation_rankeditem_ranking_id_9cd656f9", "annotation_rankeditem", "ranking_id"),
    ("annotation_ranking_task_id_4fd59c43", "annotation_ranking", "task_id"),
]


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0017_quality_annotator_rows"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="assignment",
                    name="task",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="assignments",
                        to="annotation.rankingtask",
                    ),
                ),
                migrations.AlterField(
                    model_name="rankeditem",
                    name="ranking",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="positions",
                        to="annotation.ranking",
                    ),
                ),
                migrations.AlterField(
                    model_name="ranking",
                    name="task",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="rankings",
                        to="annotation.rankingtask",
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    f'DROP INDEX IF EXISTS "{index}"',
                    reverse_sql=f'CREATE INDEX "{index}" ON "{table}" ("{column}")',
                )
                for index, table, column in INDEXES
            ],
        )
    ]
