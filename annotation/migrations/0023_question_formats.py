"""Question formats (issue 40): a study's format, a ranking's tiers.

A ranked item's position becomes its tier's index, which items ranked equal share: the
unique (ranking, position) constraint becomes a plain index (built first, so the label
queries always have one). No row changes: a ranking stored before is a strict ranking,
its positions its tier indexes and its ``tiers`` null, so every label stays as it was.
Adding the nullable ``tiers`` and the study's format with a database default rewrites no
table."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0022_content_languages"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="rankeditem",
            index=models.Index(fields=["ranking", "position"], name="ranked_item_position"),
        ),
        migrations.RemoveConstraint(
            model_name="rankeditem",
            name="unique_position",
        ),
        migrations.AddField(
            model_name="ranking",
            name="tiers",
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="study",
            name="question_format",
            field=models.CharField(
                choices=[
                    ("rank", "Rank all cards (a strict order)"),
                    ("rank_ties", "Rank all cards, ties allowed"),
                    ("top_k", "Order the k most stereotypical cards"),
                    ("best_worst", "Pick the most and the least stereotypical card"),
                    ("pairwise", "Compare two cards (or call them equal)"),
                ],
                db_default="rank",
                default="rank",
                help_text="What each task asks; fixed once the study holds a ranking.",
                max_length=20,
            ),
        ),
        migrations.AddField(
            model_name="study",
            name="question_k",
            field=models.PositiveSmallIntegerField(
                blank=True,
                help_text="top_k: how many cards are ordered (below task size).",
                null=True,
            ),
        ),
        migrations.AlterField(
            model_name="ranking",
            name="order",
            field=models.JSONField(
                help_text="Item ids, most to least stereotypical, tier after tier."
            ),
        ),
        migrations.AlterField(
            model_name="annotatorprofile",
            name="synthetic_kind",
            field=models.CharField(
                blank=True,
                choices=[
                    ("careful", "Careful"),
                    ("random", "Random order"),
                    ("shown", "Keeps the shown order"),
                    ("hurried", "Hurried"),
                    ("equal", "Calls every card equal"),
                ],
                max_length=20,
            ),
        ),
    ]
