"""Training runs: start, execute (on a gpu worker), cancel, recover lost ones.

Who holds a run, and when a holder counts as lost, is ``training.runs.recovery``:
``execute_run`` claims through it, and ``recover_lost_runs`` (when a gpu worker
starts) writes off and re-enqueues what it finds lost.

The soft time limit is checked between training steps (Celery's own limits need
a forking pool; the gpu worker runs ``-P solo``); ``SoftTimeLimitExceeded`` is
handled the same way for pools that raise it.
"""

from __future__ import annotations

import logging
import socket
import time
import uuid

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core import queue
from core.json import json_safe
from training.errors import AugmentationError, RunConflict, RunError, ml_refusals
from training.ml.examples import Example, data_hash
from training.models import Augmentation, DatasetSnapshot, TrainingRun
from training.perspectives.services import k_anonymity, request_reports
from training.registry.evaluation import calibrate_and_judge, store_evaluation
from training.registry.services import register
from training.runs import group_heads
from training.runs.dispatch import DISPATCH
from training.runs.recovery import claim, holder_missing, is_lost, write_off
from training.runs.search import execute as execute_search
from training.runs.search import lineage as search_lineage
from training.runs.search import requested as search_request
from training.selectors import active_checkpoint
from training.snapshots.services import EVAL, rows_of, to_example
from training.snapshots.steering import GROUP_HEADS, split_hyperparameters
from training.snapshots.steering import KEY as STEERING
from training.snapshots.steering import check as steering_check
from training.snapshots.steering import train_rows as steered_rows
from training.storage import encoders

log = logging.getLogger(__name__)
Status = TrainingRun.Status
EMBED_CHUNK = 512
HEARTBEAT_SECONDS = 5.0
CANCEL_POLL_SECONDS = 0.5


class RunTimeLimit(Exception):
    """The run went past its soft time limit."""


class _Cancel(Exception):
    """Cancel was requested; the run ends ``cancelled``."""


class RunSuperseded(Exception):
    """This attempt no longer owns the run (it was written off and retried, or finished)."""


def worker_name() -> str:
    """This process's node name when no Celery request names one."""
    return socket.gethostname()


def start_run(
    snapshot: DatasetSnapshot,
    *,
    encoder: str | None = None,
    epochs: int | None = None,
    recipe: str | None = None,
    paraphrases: int = 0,
    backend: str | None = None,
    augmentation: Augmentation | None = None,
    hyperparameters: dict | None = None,
    steering: dict | None = None,
    search=None,
    user=None,
    enqueue: bool = True,
) -> TrainingRun:
    """Validate and queue a run; ``RunError`` and nothing made if unfit.

    ``paraphrases > 0`` asks for (or reuses) that augmentation of the snapshot;
    if it has not run yet, the augmentation task runs first and then the run.
    ``steering`` (``training.snapshots.steering``) trains on one group's labels or
    balances a field's groups; it is kept in the run's hyper-parameters.
    ``recipe`` (``training.ml.recipes``, default ``DEFAULT_RECIPE``) gives the
    hyper-parameters that ``epochs`` and ``hyperparameters`` override; its name is
    recorded with them. ``search`` (True, a spec or a dict: ``training.runs.search``) first
    chooses lr, epochs, alpha, temperature and weight decay by grouped CV on the train split.
    """
    from training.ml.recipes import DEFAULT_RECIPE, RECIPES
    from training.ml.train import TrainConfig
    from training.runs.augmentation import request_augmentation

    name = encoder or settings.TRAINING["DEFAULT_ENCODER"]
    with ml_refusals(RunError, "unknown encoder: "):
        encoders.resolve(name)
    overrides = {"device": settings.TRAINING["DEVICE"], **(hyperparameters or {})}
    if epochs is not None:
        overrides["epochs"] = epochs
    recipe = recipe or overrides.pop("recipe", None) or DEFAULT_RECIPE
    if recipe not in RECIPES:
        raise RunError(f"unknown recipe {recipe!r}: use one of {', '.join(RECIPES)}")
    try:
        config = TrainConfig.from_recipe(recipe, **overrides)
    except TypeError as exc:
        raise RunError(f"bad hyper-parameters: {exc}") from exc
    except ValueError as exc:
        raise RunError(f"bad hyper-parameter: {exc}") from exc
    if not snapshot.train_count or not snapshot.eval_count:
        raise RunError(f"snapshot {snapshot.pk} has an empty train or eval split")
    steering_check(snapshot, steering)
    if steering and steering["kind"] == GROUP_HEADS:
        group_heads.check(snapshot, steering["field"], k_anonymity())
    search_row = search_request(snapshot, search)
    task_id = str(uuid.uuid4())
    with transaction.atomic():
        pending_augmentation = False
        if augmentation is None and paraphrases:
            try:
                augmentation, pending_augmentation = request_augmentation(
                    snapshot, backend or settings.TRAINING["PARAPHRASE_BACKEND"], paraphrases
                )
            except AugmentationError as exc:
                raise RunError(str(exc)) from exc
        elif augmentation is not None:
            if augmentation.snapshot_id != snapshot.pk:
                raise RunError(
                    f"augmentation {augmentation.pk} belongs to snapshot "
                    f"{augmentation.snapshot_id}, not {snapshot.pk}"
                )
            if augmentation.status != Augmentation.Status.DONE:
                raise RunError(f"augmentation {augmentation.pk} is {augmentation.status}, not done")
        run = TrainingRun.objects.create(
            snapshot=snapshot,
            augmentation=augmentation,
            encoder=name,
            hyperparameters={**config.to_dict(), **({STEERING: steering} if steering else {})},
            epochs=config.epochs,
            search=search_row,
            parent=active_checkpoint(),
            celery_task_id=task_id,
            created_by=user,
        )
        if enqueue:
            after = augmentation.pk if pending_augmentation else None
            queue.after_commit(DISPATCH, run.pk, task_id, after)
    return run


def cancel_run(run: TrainingRun, user=None) -> TrainingRun:
    """Cancel a queued run at once; ask a running one to stop at its next step.

    ``user`` (None for a command or a schedule) is recorded as ``cancelled_by``.
    """
    run_id = run.pk
    now = timezone.now()
    if TrainingRun.objects.filter(pk=run_id, status=Status.QUEUED).update(
        status=Status.CANCELLED,
        cancel_requested=True,
        cancelled_by=user,
        error="cancelled",
        finished_at=now,
    ):
        return TrainingRun.objects.get(pk=run_id)
    if not TrainingRun.objects.filter(pk=run_id, status__in=TrainingRun.ACTIVE_STATUSES).update(
        cancel_requested=True, cancelled_by=user
    ):
        run.refresh_from_db()
        raise RunConflict(f"run {run_id} is already {run.status}")
    return TrainingRun.objects.get(pk=run_id)


def recover_lost_runs(node: str | None = None) -> list[int]:
    """The lost-run sweep (``training.runs.recovery``): write off every run whose holder
    is lost and re-enqueue those retried. ``node``: the sweeping gpu worker's own name,
    whose dead pids it may judge; None from beat's sweep."""
    active = list(TrainingRun.objects.filter(status__in=TrainingRun.ACTIVE_STATUSES))
    lost = [run for run in active if is_lost(run, node)]
    lost += holder_missing([run for run in active if run not in lost])
    requeued = []
    for run in lost:
        if write_off(run) == Status.QUEUED:
            requeued.append(run.pk)
            queue.after_commit(DISPATCH, run.pk, None, None)
    return requeued


class _Attempt:
    """Writes of one attempt: progress, heartbeat, cancel and time-limit checks."""

    def __init__(self, run: TrainingRun, soft_limit: float) -> None:
        self.run_id, self.attempt = run.pk, run.attempts
        # Earlier attempts' epochs stay, each marked with its attempt.
        self.history: list[dict] = [
            {"attempt": h.get("attempt", self.attempt - 1), **h} for h in run.history
        ]
        self.deadline = time.monotonic() + soft_limit
        self.soft_limit = soft_limit
        self.last_beat = self.last_poll = time.monotonic()

    def update(self, statuses=TrainingRun.ACTIVE_STATUSES, **fields) -> None:
        done = TrainingRun.objects.filter(
            pk=self.run_id, attempts=self.attempt, status__in=statuses
        ).update(heartbeat_at=timezone.now(), **fields)
        if not done:
            raise RunSuperseded(f"run {self.run_id} attempt {self.attempt} was superseded")
        self.last_beat = time.monotonic()

    def on_epoch(self, report) -> None:
        rho = (report.eval_metrics or {}).get("spearman")
        entry = {"attempt": self.attempt, "epoch": report.epoch, "loss": report.loss, "rho": rho}
        self.history.append(json_safe(entry))
        self.update(status=Status.TRAINING, epoch=report.epoch, history=self.history)

    def should_stop(self) -> bool:
        """True to cancel; raises ``RunTimeLimit`` past the soft limit."""
        now = time.monotonic()
        if now > self.deadline:
            raise RunTimeLimit(f"soft time limit of {self.soft_limit:.0f} s exceeded")
        if now - self.last_poll < CANCEL_POLL_SECONDS:
            return False
        self.last_poll = now
        if now - self.last_beat > HEARTBEAT_SECONDS:
            self.update()
        return bool(
            TrainingRun.objects.filter(pk=self.run_id).values_list("cancel_requested", flat=True)[0]
        )


def training_examples(run: TrainingRun) -> tuple[list[Example], list[dict]]:
    """The train split (as the run's steering has it) plus the paraphrases of train
    examples, which inherit their origin's label and weight; and the eval originals."""
    train_rows = steered_rows(run.snapshot, split_hyperparameters(run.hyperparameters)[1])
    examples = [to_example(r) for r in train_rows]
    if run.augmentation_id:
        by_key = {r["key"]: r for r in train_rows}
        paraphrases = run.augmentation.paraphrases.filter(origin_key__in=by_key).order_by("id")
        for key, text in paraphrases.values_list("origin_key", "text"):
            examples.append(to_example({**by_key[key], "text": text}))
    return examples, rows_of(run.snapshot, EVAL)


def execute_run(run_id: int, node: str | None = None) -> str:
    """Train a run to a registered checkpoint, or record why not; returns what happened."""
    node = node or worker_name()
    run, why = claim(run_id, node)
    if run is None:
        log.info("run %s not trained here: %s", run_id, why)
        return why
    attempt = _Attempt(run, float(settings.TRAINING_RUNS["SOFT_TIME_LIMIT"]))
    try:
        if run.cancel_requested:
            raise _Cancel()
        version = _train(run, attempt)
    except RunSuperseded as exc:
        log.warning("%s", exc)
        return str(exc)
    except _Cancel:
        _finish(attempt, Status.CANCELLED, "cancelled on request")
        return "cancelled"
    except (RunTimeLimit, SoftTimeLimitExceeded) as exc:
        _finish(attempt, Status.FAILED, f"time limit: {exc or 'soft time limit exceeded'}")
        return "failed"
    except Exception as exc:
        log.exception("run %s failed", run_id)
        _finish(attempt, Status.FAILED, f"{type(exc).__name__}: {exc}")
        return "failed"
    return f"done: v{version}"


def _finish(attempt: _Attempt, status: str, error: str) -> None:
    try:
        attempt.update(status=status, error=error, finished_at=timezone.now())
    except RunSuperseded:
        log.warning(
            "run %s: attempt %s superseded before it could record %s",
            attempt.run_id,
            attempt.attempt,
            status,
        )


def _train(run: TrainingRun, attempt: _Attempt) -> int:
    from training.ml.checkpoints import Checkpoint as MLCheckpoint
    from training.ml.train import TrainConfig, TrainingCancelled, train

    hyperparameters, steering = split_hyperparameters(run.hyperparameters)
    config = TrainConfig(**hyperparameters)
    encoder = encoders.encoder(run.encoder, device=config.device)
    cache = encoders.embedding_cache()
    train_set, eval_rows = training_examples(run)
    originals = len(steered_rows(run.snapshot, steering))
    eval_set = [to_example(r) for r in eval_rows]

    # Embed every distinct text once, in chunks, so progress, heartbeat and cancel keep going.
    distinct = list(dict.fromkeys([e.text for e in train_set] + [e.text for e in eval_set]))
    for start in range(0, len(distinct), EMBED_CHUNK):
        if attempt.should_stop():
            raise _Cancel()
        cache.embed(encoder, distinct[start : start + EMBED_CHUNK])
        attempt.update()
    if run.search is not None:
        attempt.update(status=Status.SEARCHING)
        try:
            chosen = execute_search(
                run,
                train_set,
                originals,
                cache.embed(encoder, [e.text for e in train_set]),
                seed=config.seed,
                dropout=config.dropout,
                occupations_per_batch=config.occupations_per_batch,
                device=encoder.device,
                update=attempt.update,
                should_stop=attempt.should_stop,
            )
        except TrainingCancelled as exc:
            raise _Cancel() from exc
        config = TrainConfig(**{**config.to_dict(), **chosen})
        run.hyperparameters = {**run.hyperparameters, **chosen}
        run.epochs = config.epochs
        attempt.update(hyperparameters=run.hyperparameters, epochs=run.epochs)
    attempt.update(status=Status.TRAINING)
    try:
        result = train(
            train_set,
            encoder,
            config,
            eval_examples=eval_set,
            cache=cache,
            on_epoch=attempt.on_epoch,
            should_stop=attempt.should_stop,
        )
    except TrainingCancelled as exc:
        raise _Cancel() from exc
    attempt.update(status=Status.EVALUATING)
    groups = None
    if steering and steering["kind"] == GROUP_HEADS:
        groups = group_heads.fit(
            run.snapshot, steering["field"], encoder, cache, k_anonymity(), seed=config.seed
        )
    scores = result.model.score([e.text for e in eval_set], cache=cache)
    # The card calibrates on the training distribution: the train split's prompts, once
    # each; the flag is then judged on the eval split's, which calibration never saw.
    calibration, flag = calibrate_and_judge(
        result.model, run.snapshot, cache, n_boot=config.n_boot, seed=config.seed
    )
    basis = f"{calibration.basis} (snapshot {run.snapshot_id}, train split)"
    metrics = json_safe({**(result.metrics or {}), "flag": flag})
    if groups is not None:  # what the card and the registry show of the heads
        metrics["group_heads"] = json_safe(groups.summary())
    parent = run.parent
    files = MLCheckpoint.from_model(
        result.model,
        hyperparameters=run.hyperparameters,
        data_hash=data_hash(train_set),
        metrics=metrics,
        threshold=calibration.threshold,
        extra={
            "run": run.pk,
            "snapshot": run.snapshot_id,
            "snapshot_hash": run.snapshot.content_hash,
            "augmentation": run.augmentation_id,
            "parent_version": parent.version if parent else None,
            "steering": steering,
            "search": search_lineage(run.search),
            "calibration": {
                "method": calibration.method,
                "reason": calibration.reason,
                "basis": basis,
            },
            "train_examples": len(train_set),
        },
        groups=groups,
    )
    predictions = {r["key"]: float(s) for r, s in zip(eval_rows, scores, strict=True)}

    def commit_with(checkpoint) -> None:
        store_evaluation(checkpoint, run.snapshot, metrics, predictions)
        request_reports(checkpoint, run.snapshot)  # whose opinions it rewards, once committed
        attempt.update(
            statuses=[Status.EVALUATING],
            status=Status.DONE,
            epoch=sum(h["attempt"] == attempt.attempt for h in attempt.history),
            finished_at=timezone.now(),
        )

    checkpoint = register(
        files, run=run, snapshot=run.snapshot, parent=parent, in_transaction=commit_with
    )
    return checkpoint.version
