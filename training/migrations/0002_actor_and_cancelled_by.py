import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def name_past_actors(apps, schema_editor):
    """Events before actors were kept: the user's name, else an honest 'not recorded'."""
    RegistryEvent = apps.get_model("training", "RegistryEvent")
    for event in RegistryEvent.objects.select_related("user"):
        event.actor = (
            event.user.username if event.user else "not recorded (a command or a schedule)"
        )
        event.save(update_fields=["actor"])


class Migration(migrations.Migration):
    dependencies = [
        ("training", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterField(
            model_name="augmentation",
            name="min_cosine",
            field=models.FloatField(
                help_text="training.ml.paraphrase.DEFAULT_MIN_COSINE unless set."
            ),
        ),
        migrations.AddField(
            model_name="registryevent",
            name="actor",
            field=models.CharField(default="", max_length=150),
            preserve_default=False,
        ),
        migrations.RunPython(name_past_actors, migrations.RunPython.noop),
        migrations.AddField(
            model_name="trainingrun",
            name="cancelled_by",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
    ]
