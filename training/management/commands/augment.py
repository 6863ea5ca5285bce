import time

from django.core.management.base import CommandError

from core.commands import ServiceCommand
from training.management.commands._common import get_snapshot
from training.ml.paraphrase import BACKENDS
from training.models import Augmentation
from training.services import request_augmentation


class Command(ServiceCommand):
    help = (
        "Paraphrase a snapshot's prompts N times each (Celery, default queue); prints the "
        "augmentation id. The same snapshot, backend and N reuse what exists."
    )

    def add_arguments(self, parser):
        parser.add_argument("--snapshot", type=int, required=True)
        parser.add_argument("--backend", choices=list(BACKENDS), default="offline")
        parser.add_argument("--n", type=int, default=8, help="Paraphrases per prompt.")
        parser.add_argument("--encoder", help="Encoder of the cosine filter (default: settings).")
        parser.add_argument("--wait", action="store_true", help="Wait until it has run.")

    def handle(self, *args, snapshot, backend, n, encoder, wait, **options):
        from training.tasks import augment_snapshot

        augmentation, pending = request_augmentation(get_snapshot(snapshot), backend, n)
        if pending and augmentation.status == Augmentation.Status.QUEUED:
            augment_snapshot.delay(augmentation.pk, encoder)  # a running one is awaited
        self.stdout.write(str(augmentation.pk))
        if not wait:
            return
        while augmentation.status not in (Augmentation.Status.DONE, Augmentation.Status.FAILED):
            time.sleep(0.5)
            augmentation.refresh_from_db()
        if augmentation.status == Augmentation.Status.FAILED:
            raise CommandError(f"augmentation {augmentation.pk} failed: {augmentation.error}")
        stats = augmentation.stats
        self.stderr.write(
            f"augmentation {augmentation.pk}: {stats.get('kept')} paraphrases kept, "
            f"{stats.get('rejected')} rejected, over {stats.get('originals')} prompts"
        )
