from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0001_initial"),
    ]

    operations = [
        migrations.CreateModel(
            name="Instructions",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("version", models.PositiveIntegerField(unique=True)),
                (
                    "text",
                    models.TextField(help_text="Plain text; a blank line starts a new paragraph."),
                ),
                ("published_at", models.DateTimeField(auto_now_add=True)),
            ],
            options={
                "verbose_name_plural": "instructions",
                "ordering": ["-version"],
            },
        ),
    ]
