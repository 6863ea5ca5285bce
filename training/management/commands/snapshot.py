from annotation.studies import lifecycle as studies
from core.commands import ServiceCommand
from training.services import create_snapshot
from training.snapshots.services import WEIGHTINGS


class Command(ServiceCommand):
    help = (
        "Freeze today's item labels of one or more collection studies (default: the default "
        "study) into a dataset snapshot; prints its id."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--study",
            action="append",
            metavar="SLUG",
            help="a study to freeze (repeat for several; default: the default study)",
        )
        parser.add_argument(
            "--include-synthetic", action="store_true", help="Count synthetic annotators too."
        )
        parser.add_argument("--seed", type=int, default=0, help="Seed of the grouped split.")
        parser.add_argument("--eval-fraction", type=float, default=0.2)
        parser.add_argument(
            "--weighting",
            choices=WEIGHTINGS,
            help="How labels average rankings (default: STEREORANK_LABEL_WEIGHTING, none).",
        )

    def handle(self, *args, include_synthetic, seed, eval_fraction, weighting, **options):
        chosen = options["study"]
        snap = create_snapshot(
            studies=None if chosen is None else [studies.resolve(slug) for slug in chosen],
            include_synthetic=include_synthetic,
            seed=seed,
            eval_fraction=eval_fraction,
            weighting=weighting,
        )
        self.stderr.write(
            f"snapshot {snap.pk}: {snap.example_count} items ({snap.train_count} train, "
            f"{snap.eval_count} eval) from {snap.ranking_count} rankings of "
            f"{', '.join(s.slug for s in snap.studies.all())}, "
            f"hash {snap.content_hash[:12]}, labels weighted: "
            f"{snap.label_weighting.get('method', 'none')}"
        )
        self.stdout.write(str(snap.pk))
