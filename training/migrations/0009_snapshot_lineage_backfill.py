"""Snapshots made before label weighting say so ({"method": "none"}), and the pseudonyms
of annotators erased before erasure reached snapshot lineage leave it."""

from django.db import migrations


def backfill(apps, schema_editor):
    from annotation.rankings.exports import pseudonym  # a pure HMAC of the user id

    snapshots = apps.get_model("training", "DatasetSnapshot")
    profiles = apps.get_model("annotation", "AnnotatorProfile")
    snapshots.objects.filter(label_weighting={}).update(label_weighting={"method": "none"})
    erased = {
        pseudonym(uid)
        for uid in profiles.objects.filter(erased_at__isnull=False).values_list(
            "user_id", flat=True
        )
    }
    if not erased:
        return
    for snapshot in snapshots.objects.only("pk", "exclusions", "label_weighting"):
        named = [
            snapshot.exclusions.get("annotators", {}),
            snapshot.label_weighting.get("annotators", {}),
        ]
        if any(name in lineage for lineage in named for name in erased):
            for lineage in named:
                for name in erased & set(lineage):
                    del lineage[name]
            snapshot.save(update_fields=["exclusions", "label_weighting"])


class Migration(migrations.Migration):
    dependencies = [
        ("training", "0008_snapshot_label_weighting"),
        ("annotation", "0005_merge_instructions"),
    ]

    operations = [migrations.RunPython(backfill, migrations.RunPython.noop)]
