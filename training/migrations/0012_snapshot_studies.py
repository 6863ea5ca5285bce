"""A snapshot records the studies whose rankings it froze, and the k under which a group's
labels are left out; snapshots made before studies existed froze the default study's.

Snapshots made before the k rule kept every group's labels, a group of one's too (that
person's own answers, kept even after their erasure). Their groups are counted again
from the annotators whose rankings (up to the snapshot's last) are still stored, and
those under ``STEREORANK_GROUP_K`` lose their labels: an erased annotator counts for
nothing, so a group that was only them goes.
"""

from collections import defaultdict

from django.conf import settings
from django.db import migrations, models

from annotation.stats.records import group_of


def forwards(apps, schema_editor):
    Study = apps.get_model("annotation", "Study")
    Snapshot = apps.get_model("training", "DatasetSnapshot")
    if not Snapshot.objects.exists():
        return
    default, _ = Study.objects.get_or_create(
        slug="default",
        defaults={"name": "Default study", "platform": "generic", "kind": "collection"},
    )
    Ranking = apps.get_model("annotation", "Ranking")
    k = int(settings.STEREORANK["GROUP_K"])
    for snapshot in Snapshot.objects.defer("examples"):
        snapshot.studies.add(default)
        members = defaultdict(set)
        rankings = Ranking.objects.filter(annotator__erased_at__isnull=True)
        if snapshot.last_ranking_id is not None:
            rankings = rankings.filter(pk__lte=snapshot.last_ranking_id)
        for user, answers in rankings.values_list("annotator__user_id", "annotator__demographics"):
            for field in snapshot.group_labels:
                value = group_of(answers or {}, field)
                if value is not None:
                    members[(field, value)].add(user)
        snapshot.group_labels = {
            field: {v: labels for v, labels in groups.items() if len(members[(field, v)]) >= k}
            for field, groups in snapshot.group_labels.items()
        }
        snapshot.group_k = k
        snapshot.save(update_fields=["group_labels", "group_k"])


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0011_study_owns_its_rows"),
        ("training", "0011_run_search"),
    ]

    operations = [
        migrations.AddField(
            model_name="datasetsnapshot",
            name="studies",
            field=models.ManyToManyField(
                help_text="Whose rankings it froze.",
                related_name="snapshots",
                to="annotation.study",
            ),
        ),
        migrations.AddField(
            model_name="datasetsnapshot",
            name="group_k",
            field=models.PositiveSmallIntegerField(
                blank=True,
                help_text="Group labels kept only for groups of this many annotators or more "
                "(blank: a snapshot from before this rule).",
                null=True,
            ),
        ),
        migrations.RunPython(forwards, migrations.RunPython.noop, elidable=False),
    ]
