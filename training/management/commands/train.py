import time

from django.core.management.base import CommandError
from tqdm import tqdm

from core.commands import ServiceCommand
from training import selectors
from training.management.commands._common import fmt_rho, get_snapshot
from training.ml.recipes import DEFAULT_RECIPE, RECIPES
from training.models import TrainingRun
from training.services import start_run
from training.snapshots.steering import parse as parse_steering


class Command(ServiceCommand):
    help = (
        "Queue a training run on the gpu queue; prints the run id, and with --wait a progress "
        "bar and then the checkpoint version."
    )

    def add_arguments(self, parser):
        parser.add_argument("--snapshot", type=int, required=True)
        parser.add_argument("--encoder", help="Encoder name or folder (default: settings).")
        parser.add_argument(
            "--recipe",
            choices=list(RECIPES),
            default=DEFAULT_RECIPE,
            help=f"Hyper-parameters to start from (default: {DEFAULT_RECIPE}; "
            "seed: the model card's, lr 1e-5).",
        )
        parser.add_argument("--epochs", type=int, help="Epochs (default: the recipe's).")
        parser.add_argument("--lr", type=float, help="Learning rate (default: the recipe's).")
        parser.add_argument("--seed", type=int)
        parser.add_argument("--augmentation", type=int, help="Train with this augmentation.")
        parser.add_argument(
            "--paraphrases", type=int, default=0, help="Augment with N paraphrases first."
        )
        steering = parser.add_mutually_exclusive_group()
        steering.add_argument(
            "--steer", metavar="FIELD=VALUE", help="Train on one group's labels (age_band=65-74)."
        )
        steering.add_argument(
            "--balance", metavar="FIELD", help="Every group of FIELD weighs the same in the loss."
        )
        steering.add_argument(
            "--groups",
            metavar="FIELD",
            help="Also a head per group of FIELD (k or more annotators), shrunk toward the "
            "pooled one: per-group scores and a disagreement estimate.",
        )
        parser.add_argument(
            "--search",
            nargs="?",
            const=True,
            metavar="SPEC",
            help="Choose lr, epochs, alpha, temperature and weight decay first, by grouped "
            "5-fold CV on the train split (a 144-configuration grid); SPEC narrows it, "
            'e.g. "lr=1e-3,1e-2 epochs=4,12 folds=3".',
        )
        parser.add_argument("--wait", action="store_true")

    def handle(
        self,
        *args,
        snapshot,
        encoder,
        recipe,
        epochs,
        lr,
        seed,
        augmentation,
        paraphrases,
        search,
        wait,
        **options,
    ):
        steering = parse_steering(options["steer"], options["balance"], options["groups"])
        snap = get_snapshot(snapshot)
        aug = None
        if augmentation is not None:
            aug = selectors.augmentation(augmentation)
            if aug is None:
                raise CommandError(f"there is no augmentation {augmentation}")
        hyperparameters = {k: v for k, v in {"lr": lr, "seed": seed}.items() if v is not None}
        run = start_run(
            snap,
            encoder=encoder,
            epochs=epochs,
            recipe=recipe,
            paraphrases=paraphrases,
            augmentation=aug,
            hyperparameters=hyperparameters,
            steering=steering,
            search=search,
        )
        self.stdout.write(str(run.pk))
        self.stdout.flush()
        if wait:
            self._wait(run)

    def _wait(self, run: TrainingRun) -> None:
        unit = "step" if run.search else "epoch"  # a search's fold-epochs, then the epochs
        with tqdm(total=run.steps[1], desc=f"run {run.pk}", unit=unit, file=self.stderr) as bar:
            said = run.error
            while not run.is_finished:
                time.sleep(0.5)
                run.refresh_from_db()
                if run.error != said and not run.is_finished:  # a lost worker, a retry
                    said = run.error
                    bar.write(f"run {run.pk}: {said}", file=self.stderr)
                done, bar.total = run.steps
                bar.update(done - bar.n)
                postfix = run.status
                if history := run.attempt_history:
                    last = history[-1]
                    rho = "-" if last.get("rho") is None else f"{last['rho']:.3f}"
                    postfix += f" loss {last['loss']:.4f} rho {rho}"
                bar.set_postfix_str(postfix, refresh=False)
                bar.refresh()
        if run.status != TrainingRun.Status.DONE:
            raise CommandError(f"run {run.pk} {run.status}: {run.error}")
        ckpt = run.checkpoint
        if run.search:
            best = run.search["scores"][run.search["chosen"]]
            chosen = ", ".join(f"{k} {v:g}" for k, v in best["config"].items())
            self.stderr.write(
                f"search chose {chosen}: CV rho {best['mean']:.3f} over "
                f"{len(run.search['scores'])} configurations"
            )
        self.stderr.write(f"checkpoint v{ckpt.version}: rho {fmt_rho(ckpt.metrics)}")
        self.stdout.write(str(ckpt.version))
