"""From rankings to checkpoints: snapshots, paraphrases, runs, the registry.

Glossary in docs/design.md. Writes go through ``training.services``; the
models carry the invariants (one active checkpoint, one checkpoint per run,
one evaluation per checkpoint and snapshot). Past 400 lines because those invariants
and the help texts that document each stored figure live with the fields.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q


class DatasetSnapshot(models.Model):
    """Item labels frozen at one moment, with their content hash and grouped split.

    ``examples`` is a list of ``{"key", "item_id", "text", "label", "group",
    "occupation", "prompt_type", "split"}`` (``split`` is ``train`` or ``eval``);
    ``group_labels`` is ``{field: {value: {key: label}}}`` from that demographic
    group's rankings only, for groups of ``group_k`` or more annotators (a smaller
    group's labels would be its few members' answers). Personal data stays out: only
    aggregated labels and, in ``exclusions``, pseudonyms. ``studies`` are the
    (collection) studies whose rankings it froze: its lineage.
    """

    created_at = models.DateTimeField(auto_now_add=True)
    studies = models.ManyToManyField(
        "annotation.Study", related_name="snapshots", help_text="Whose rankings it froze."
    )
    group_k = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        help_text="Group labels kept only for groups of this many annotators or more "
        "(blank: a snapshot from before this rule).",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    include_synthetic = models.BooleanField(default=False)
    ranking_count = models.PositiveIntegerField()
    # Highest Ranking id included: "new rankings since the last snapshot" counts above it.
    last_ranking_id = models.BigIntegerField(null=True, blank=True)
    content_hash = models.CharField(max_length=64, db_index=True)
    split_seed = models.IntegerField(default=0)
    eval_fraction = models.FloatField(default=0.2)
    example_count = models.PositiveIntegerField()
    train_count = models.PositiveIntegerField()
    eval_count = models.PositiveIntegerField()
    examples = models.JSONField()
    group_labels = models.JSONField(default=dict, blank=True)
    # What the snapshot did not see and why (training.snapshots.services.exclusions): pseudonymous
    # annotators with their reason, ranking counts per reason, check cards dropped; after an
    # erasure, "erasures": the labels it removed (training.snapshots.erasure).
    exclusions = models.JSONField(default=dict, blank=True)
    # How labels were averaged (training.snapshots.services.label_weights): {"method": "none"}, or
    # reliability weights with each pseudonymous annotator's weight and its basis.
    label_weighting = models.JSONField(default=dict, blank=True)
    # Group heads' penalty per "field:encoder", chosen once by grouped CV and reused by every
    # retrain (training.runs.group_heads).
    group_penalties = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-id"]
        get_latest_by = "id"

    def __str__(self) -> str:
        return f"snapshot {self.pk} ({self.example_count} items, {self.content_hash[:8]})"


class Augmentation(models.Model):
    """One paraphrasing pass over a snapshot's originals: N per original, one backend."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    snapshot = models.ForeignKey(
        DatasetSnapshot, on_delete=models.CASCADE, related_name="augmentations"
    )
    backend = models.CharField(max_length=30)
    model = models.CharField(max_length=200, blank=True)
    n = models.PositiveSmallIntegerField(default=8)
    min_cosine = models.FloatField(
        help_text="training.ml.paraphrase.DEFAULT_MIN_COSINE unless set."
    )
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    # Kept / rejected counts, rejection reasons, cosine summary (from the paraphrase library).
    stats = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    celery_task_id = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["snapshot", "backend", "model", "n"], name="one_augmentation_per_setting"
            )
        ]

    def __str__(self) -> str:
        return f"augmentation {self.pk} of snapshot {self.snapshot_id} ({self.backend}, n={self.n})"


class Paraphrase(models.Model):
    """A kept paraphrase of one snapshot example, with its provenance."""

    augmentation = models.ForeignKey(
        Augmentation, on_delete=models.CASCADE, related_name="paraphrases"
    )
    origin_key = models.CharField(max_length=100)
    text = models.TextField()
    backend = models.CharField(max_length=30)
    model = models.CharField(max_length=200, blank=True)
    template = models.CharField(max_length=200, blank=True)
    seed = models.BigIntegerField(null=True, blank=True)
    cosine = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["augmentation", "origin_key", "text"], name="unique_paraphrase_text"
            )
        ]

    def __str__(self) -> str:
        return self.text


class TrainingRun(models.Model):
    """Snapshot + encoder + hyper-parameters, trained on the gpu queue; progress lives here."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        EMBEDDING = "embedding", "Embedding"
        SEARCHING = "searching", "Searching"
        TRAINING = "training", "Training"
        EVALUATING = "evaluating", "Evaluating"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    ACTIVE_STATUSES = (Status.EMBEDDING, Status.SEARCHING, Status.TRAINING, Status.EVALUATING)
    FINISHED_STATUSES = (Status.DONE, Status.FAILED, Status.CANCELLED)

    snapshot = models.ForeignKey(DatasetSnapshot, on_delete=models.PROTECT, related_name="runs")
    augmentation = models.ForeignKey(
        Augmentation, null=True, blank=True, on_delete=models.PROTECT, related_name="runs"
    )
    encoder = models.CharField(max_length=300)
    hyperparameters = models.JSONField(help_text="training.ml.train.TrainConfig as a dict.")
    # The active version when the run was started: the new checkpoint's parent.
    parent = models.ForeignKey(
        "Checkpoint", null=True, blank=True, on_delete=models.SET_NULL, related_name="child_runs"
    )
    status = models.CharField(
        max_length=20, choices=Status.choices, default=Status.QUEUED, db_index=True
    )
    epoch = models.PositiveIntegerField(default=0)
    epochs = models.PositiveIntegerField()
    # One entry per finished epoch: {"attempt", "epoch", "loss", "rho"}; a retried run keeps
    # the earlier attempts' entries (``attempt_history`` is the current attempt's).
    history = models.JSONField(default=list, blank=True)
    # A hyper-parameter search before training (training.runs.search), None without one: the grid,
    # its progress, then every configuration with its CV rho and interval, and the chosen one.
    search = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    celery_task_id = models.CharField(max_length=255, blank=True)
    cancel_requested = models.BooleanField(default=False)
    # Which worker process holds the run, and when it last said so (lost-worker recovery).
    worker = models.CharField(max_length=255, blank=True)
    worker_pid = models.IntegerField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # When the lost-run sweep first saw the holder's own heartbeat missing (cleared when it
    # beats again): the run is written off once that has lasted WORKER_LOST_AFTER.
    holder_missing_since = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    cancelled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(epoch__lte=models.F("epochs")), name="epoch_le_epochs"
            )
        ]

    def __str__(self) -> str:
        return f"run {self.pk} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in self.FINISHED_STATUSES

    @property
    def progress(self) -> float:
        """Fraction of steps done (a search's fold-epochs, then the epochs), 1.0 once done."""
        if self.status == self.Status.DONE:
            return 1.0
        done, total = self.steps
        return done / total if total else 0.0

    @property
    def attempt_history(self) -> list[dict]:
        """The current attempt's epochs (entries from before attempts were marked count)."""
        return [h for h in self.history if h.get("attempt", self.attempts) == self.attempts]

    @property
    def steps(self) -> tuple[int, int]:
        """``(done, total)``: a search's fold-epochs (``training.runs.search``), then the epochs."""
        search = self.search or {}
        return search.get("done", 0) + self.epoch, search.get("total", 0) + self.epochs


class VersionCounter(models.Model):
    """One row holding the last checkpoint version; locked to hand out the next one."""

    last = models.PositiveIntegerField(default=0)


class Checkpoint(models.Model):
    """A registry version: files on disk under ``path``, lineage and metrics here."""

    class Status(models.TextChoices):
        CANDIDATE = "candidate", "Candidate"
        ACTIVE = "active", "Active"
        ARCHIVED = "archived", "Archived"

    version = models.PositiveIntegerField(unique=True)
    run = models.OneToOneField(
        TrainingRun, null=True, blank=True, on_delete=models.PROTECT, related_name="checkpoint"
    )
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children"
    )
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.CANDIDATE)
    path = models.CharField(max_length=500, help_text="The checkpoint directory.")
    head_sha256 = models.CharField(max_length=64)
    encoder_name = models.CharField(max_length=300)
    encoder_identity = models.JSONField(help_text="training.ml.encoders.EncoderIdentity.")
    hyperparameters = models.JSONField(default=dict, blank=True)
    snapshot = models.ForeignKey(
        DatasetSnapshot,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="checkpoints",
    )
    data_hash = models.CharField(max_length=64, blank=True)
    code_version = models.CharField(max_length=100, blank=True)
    threshold = models.FloatField()
    threshold_basis = models.TextField(
        blank=True, help_text="How the threshold was set: calibrated on what, or why not."
    )
    metrics = models.JSONField(default=dict, blank=True)
    source = models.CharField(max_length=200, blank=True, help_text="Imported file, if any.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-version"]
        constraints = [
            models.UniqueConstraint(
                fields=["status"], condition=Q(status="active"), name="one_active_checkpoint"
            )
        ]

    def __str__(self) -> str:
        return f"v{self.version} ({self.status})"


class Evaluation(models.Model):
    """A checkpoint scored on one snapshot's eval split; predictions kept for comparisons."""

    checkpoint = models.ForeignKey(Checkpoint, on_delete=models.CASCADE, related_name="evaluations")
    snapshot = models.ForeignKey(
        DatasetSnapshot, on_delete=models.CASCADE, related_name="evaluations"
    )
    metrics = models.JSONField()
    # {example key: score} over the snapshot's eval originals.
    predictions = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["checkpoint", "snapshot"], name="one_evaluation_per_snapshot"
            )
        ]

    def __str__(self) -> str:
        return f"v{self.checkpoint.version} on snapshot {self.snapshot_id}"


class RegistryEvent(models.Model):
    """Who promoted, rolled back or imported which version, when and why."""

    class Action(models.TextChoices):
        PROMOTE = "promote", "Promote"
        ROLLBACK = "rollback", "Roll back"
        IMPORT = "import", "Import"

    action = models.CharField(max_length=20, choices=Action.choices)
    checkpoint = models.ForeignKey(Checkpoint, on_delete=models.PROTECT, related_name="events")
    # The version active before this event (None if there was none).
    previous = models.ForeignKey(
        Checkpoint, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Who acted, in words: a staff user's name, "manage.py promote (root)", "schedule X".
    actor = models.CharField(max_length=150)
    reason = models.TextField(blank=True)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"{self.action} v{self.checkpoint.version} by {self.actor}"


class RetrainDecision(models.Model):
    """One decision of a retraining schedule, with its reason (written by training.schedules)."""

    class Decision(models.TextChoices):
        RETRAIN = "retrain", "Retrain"
        SKIP = "skip", "Skip"
        PROMOTE = "promote", "Promote"
        KEEP = "keep", "Keep"

    at = models.DateTimeField(auto_now_add=True)
    schedule = models.CharField(max_length=200, help_text="The periodic task's name.")
    decision = models.CharField(max_length=20, choices=Decision.choices)
    reason = models.TextField()
    snapshot = models.ForeignKey(
        DatasetSnapshot, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    run = models.ForeignKey(
        TrainingRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="decisions"
    )
    checkpoint = models.ForeignKey(
        Checkpoint, null=True, blank=True, on_delete=models.SET_NULL, related_name="decisions"
    )

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"{self.schedule}: {self.decision}"


class PerspectiveSummary(models.Model):
    """One checkpoint's perspective report on one snapshot for one demographic field.

    How it was computed (T, k, bootstrap), what it read (rankings, annotators) and
    the between-group results (Friedman, pairwise divergence, groups of k or more
    only); its presence marks the report as done. Each group is a ``PerspectiveReport``
    row. Both are written once, together (``training.perspectives.services``), and never
    recomputed: a stored report keeps the rankings it read, later withdrawals
    included; one computed later reads the rankings as they count then.
    """

    checkpoint = models.ForeignKey(
        Checkpoint, on_delete=models.CASCADE, related_name="perspective_summaries"
    )
    snapshot = models.ForeignKey(
        DatasetSnapshot, on_delete=models.CASCADE, related_name="perspective_summaries"
    )
    field = models.CharField(max_length=50, help_text="annotation.DemographicField key.")
    temperature = models.FloatField(help_text="The checkpoint's training temperature T.")
    k = models.PositiveSmallIntegerField(help_text="Fewest annotators behind a group's figures.")
    n_boot = models.PositiveIntegerField()
    seed = models.IntegerField()
    n_rankings = models.PositiveIntegerField(help_text="Rankings read (every group and none).")
    n_annotators = models.PositiveIntegerField()
    # training.ml.alignment_report.FriedmanResult as a dict; None with fewer than 3 groups.
    friedman = models.JSONField(null=True, blank=True)
    # [training.ml.alignment_report.Divergence as a dict] between groups of k or more.
    divergence = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["field"]
        constraints = [
            models.UniqueConstraint(
                fields=["checkpoint", "snapshot", "field"], name="one_perspective_summary"
            )
        ]

    def __str__(self) -> str:
        return f"perspectives of v{self.checkpoint.version} on snapshot {self.snapshot_id}"


class PerspectiveReport(models.Model):
    """One group's figures for one checkpoint, snapshot and field, or its suppression.

    ``computed``: ``figures`` is ``training.ml.alignment_report.GroupPerspective``
    as a dict (alignment, human baseline, first-choice JS, Spearman, each with its
    95% interval; the counts behind them; per-occupation and per-prompt alignment).
    ``fewer_than_k``: the group had fewer than k annotators; nothing about it is
    stored but its name (no figure, no count). No row is about one person.
    """

    class Status(models.TextChoices):
        COMPUTED = "computed", "Computed"
        FEWER_THAN_K = "fewer_than_k", "Fewer than k annotators"

    checkpoint = models.ForeignKey(
        Checkpoint, on_delete=models.CASCADE, related_name="perspective_reports"
    )
    snapshot = models.ForeignKey(
        DatasetSnapshot, on_delete=models.CASCADE, related_name="perspective_reports"
    )
    field = models.CharField(max_length=50)
    group = models.CharField(max_length=200, help_text="The field's value (self-described).")
    status = models.CharField(max_length=20, choices=Status.choices)
    # The headline figure, copied out of ``figures`` so groups sort in the database.
    alignment = models.FloatField(null=True, blank=True)
    figures = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["field", "group"]
        constraints = [
            models.UniqueConstraint(
                fields=["checkpoint", "snapshot", "field", "group"],
                name="one_perspective_per_group",
            ),
            models.CheckConstraint(
                condition=Q(status="computed", alignment__isnull=False)
                | Q(status="fewer_than_k", alignment__isnull=True, figures={}),
                name="suppressed_groups_have_no_figures",
            ),
        ]

    def __str__(self) -> str:
        return f"v{self.checkpoint.version} {self.field}={self.group} ({self.status})"


class EncoderGate(models.Model):
    """The accuracy gate of one exported encoder (backend, quantization) for one checkpoint,
    on one snapshot's eval split (``training.storage.encoders``): its figures and verdict."""

    checkpoint = models.ForeignKey(
        Checkpoint, on_delete=models.CASCADE, related_name="encoder_gates"
    )
    snapshot = models.ForeignKey(DatasetSnapshot, on_delete=models.CASCADE, related_name="+")
    backend = models.CharField(max_length=20)
    quantization = models.CharField(max_length=20)
    encoder_key = models.CharField(max_length=16, help_text="EncoderIdentity.key of the copy.")
    encoder_identity = models.JSONField(help_text="training.ml.encoders.EncoderIdentity.")
    # training.ml.encoders.gate.GateResult.to_dict(): figures, tolerances, passed; and
    # "scores": the per-prompt scores they were computed from (training.storage.encoders.run_gate).
    metrics = models.JSONField()
    passed = models.BooleanField()
    at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["checkpoint", "snapshot", "encoder_key"], name="one_gate_per_encoder"
            )
        ]

    def __str__(self) -> str:
        verdict = "passed" if self.passed else "refused"
        return f"v{self.checkpoint.version} {self.backend}/{self.quantization}: {verdict}"


class LearningCurve(models.Model):
    """A snapshot's learning curve (``training.runs.learning_curves``): eval rho at shares of
    its rankings, several draws each, and the fitted curve's projections. One per snapshot;
    a recomputation replaces it."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    snapshot = models.OneToOneField(
        DatasetSnapshot, on_delete=models.CASCADE, related_name="learning_curve"
    )
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    draws = models.PositiveSmallIntegerField(default=3)
    recipe = models.CharField(max_length=50, blank=True)
    encoder = models.CharField(max_length=200, blank=True)
    n_rankings = models.PositiveIntegerField(null=True, blank=True)
    n_tasks = models.PositiveIntegerField(null=True, blank=True)
    # [{"share", "draw", "tasks", "rankings", "train_items", "rho"}], share = rankings / N.
    points = models.JSONField(default=list, blank=True)
    # The fit (``training.ml.learning_curve.LearningCurve`` as a dict), None until done.
    fit = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"learning curve of snapshot {self.snapshot_id} ({self.status})"


class LLMSpend(models.Model):
    """What the LLM (paraphrases, the optimiser's rewriter) cost on one UTC day, in USD:
    ``spent`` (the answers' priced usage) and ``reserved`` (the worst case of requests in
    flight), shared by every request and process (``training.llm_budget``)."""

    day = models.DateField(unique=True)
    spent_usd = models.FloatField(default=0.0)
    reserved_usd = models.FloatField(default=0.0)
    requests = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-day"]

    def __str__(self) -> str:
        return f"{self.day}: ${self.spent_usd:.4f} spent, ${self.reserved_usd:.4f} reserved"


class GroupHeadChoice(models.Model):
    """A study owner's recorded choice to train group heads on a special-category field
    (``STEREORANK["SPECIAL_CATEGORY_FIELDS"]``, religion or belief by default): who, when
    and why (``manage.py allow_group_heads``). Without one for each study a snapshot froze,
    ``train --groups`` on that field is refused (``training.runs.group_heads``)."""

    study = models.ForeignKey("annotation.Study", on_delete=models.CASCADE, related_name="+")
    field = models.CharField(max_length=50)
    chosen_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    chosen_by_name = models.CharField(max_length=150, help_text="The owner's name then.")
    reason = models.TextField()
    chosen_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["study", "field"], name="one_choice_per_field")
        ]

    def __str__(self) -> str:
        return f"{self.field} for group heads in study {self.study_id}, by {self.chosen_by_name}"
