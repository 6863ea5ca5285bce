"""Everything that exists goes into one default study (slug ``default``), so that a lab
that never creates a second study sees no change; a study's ``active`` becomes its status.

Before this, a study was only an entry link onto the one pool of items and tasks. Its
participants ranked that pool, so they (like every other annotator) now belong to the
default study, where their rankings are; the link itself keeps its slug and codes.
"""

from django.db import migrations

OWNED = ("Item", "RankingTask", "ConsentText", "Instructions", "GroupQuota", "AnnotatorProfile")


def forwards(apps, schema_editor):
    Study = apps.get_model("annotation", "Study")
    Study.objects.filter(active=True).update(status="open")
    Study.objects.filter(active=False).update(status="closed")
    default, _ = Study.objects.get_or_create(
        slug="default",
        defaults={
            "name": "Default study",
            "platform": "generic",
            "kind": "collection",
            "status": "open",
        },
    )
    for name in OWNED:
        apps.get_model("annotation", name).objects.filter(study__isnull=True).update(study=default)


def backwards(apps, schema_editor):
    Study = apps.get_model("annotation", "Study")
    Study.objects.filter(status="open").update(active=True)
    Study.objects.exclude(status="open").update(active=False)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0009_study_unit_fields"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
