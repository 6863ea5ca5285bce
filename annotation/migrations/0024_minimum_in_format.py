"""A study's blank minimum is one six-card ranking's time in its format (issue 40,
``annotation.stats.effort``); the quota's help says it counts answers. Existing studies
keep the minimum they hold (1 by default), which each asks as written: no row changes."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0023_question_formats"),
    ]

    operations = [
        migrations.AlterField(
            model_name="study",
            name="minimum_rankings",
            field=models.PositiveIntegerField(
                blank=True,
                help_text="Answers stored before the completion code shows, also when tasks run out (at most the quota counts); blank: one six-card ranking's time in this format.",
                null=True,
            ),
        ),
        migrations.AlterField(
            model_name="study",
            name="tasks_per_participant",
            field=models.PositiveIntegerField(
                blank=True,
                help_text="Each participant's quota, in answers; blank: the default quota's time (STEREORANK_ANNOTATOR_QUOTA six-card rankings) in this format.",
                null=True,
            ),
        ),
    ]
