"""Models of running a study: the study (the unit a lab runs), erasure records,
recruitment (group quotas: ``annotation.models.quotas``).

Kept apart from ``annotation.models`` (which imports this module so that Django
registers them) so that each concept has a home of its own; this module imports
nothing from the app (other models are named by string), so no cycle.
"""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone

from core.languages import refusal as language_refusal


class Erasure(models.Model):
    """That one annotator's data was erased, when, and how many rankings went with it.

    Nothing here says whose: no annotator, no pseudonym. A snapshot frozen before
    ``erased_at`` holds labels that an erased annotator's rankings helped make
    (``annotation.rankings.selectors.erasures_after``).
    """

    class Via(models.TextChoices):
        PARTICIPANT = "participant", "The participant (portal or API)"
        STAFF = "staff", "Staff, on a request received by other means"

    erased_at = models.DateTimeField(default=timezone.now, db_index=True)
    rankings_removed = models.PositiveIntegerField()
    via = models.CharField(max_length=20, choices=Via.choices)

    class Meta:
        ordering = ["-erased_at"]

    def __str__(self) -> str:
        return f"erasure of {self.erased_at:%Y-%m-%d %H:%M} ({self.rankings_removed} rankings)"


DEFAULT_STUDY_SLUG = "default"


def default_languages() -> list[str]:
    """A study's languages unless told: English, the source language."""
    return ["en"]


def default_study_pk() -> int:
    """The default study's id, made when missing: what a study-owned row belongs to when
    nobody names a study, so a lab that never creates a second study never sees one.

    The default of every study foreign key. It reads the id alone, so that migrations
    (which call it when a column becomes not null) never touch fields added later.
    """
    pk = Study.objects.filter(slug=DEFAULT_STUDY_SLUG).values_list("pk", flat=True).first()
    if pk is None:
        pk = Study.objects.get_or_create(
            slug=DEFAULT_STUDY_SLUG,
            defaults={"name": "Default study", "platform": Study.Platform.GENERIC},
        )[0].pk
    return pk


def default_study() -> "Study":
    """The default study, made when missing (``default_study_pk``)."""
    return Study.objects.get(pk=default_study_pk())


def study_ids(studies) -> list[int]:
    """The ids of ``studies`` (studies or ids), sorted; the default study's alone for None:
    how every read of rankings is scoped."""
    if studies is None:
        return [default_study_pk()]
    return sorted({getattr(s, "pk", s) for s in studies})


class Study(models.Model):
    """The unit a lab runs: its items, tasks, consent and instruction versions, group
    quotas, participants, task size and overlap, and its entry link.

    ``kind``: a ``collection`` study's rankings become training labels; a ``validation``
    study's judge conditions and never do. ``status``: a ``draft`` is being prepared, an
    ``open`` study admits participants and serves tasks, a ``closed`` one admits nobody
    new (its participants may finish), an ``archived`` one is kept for its data only.

    Participants arrive at ``/join/<slug>/`` with the platform's ids in the query
    (``annotation.participants.recruitment.PLATFORM_PARAMS``) and join by answering its consent
    page (``annotation.participants.admission``); the portal's sign-up page admits to the study
    only with ``open_signup``. They leave with the completion code when they reach their quota
    or run out of tasks, having answered their minimum (``recruitment.minimum_answers``), or
    with the screen-out code when they decline consent or their group is full. Everything made
    without naming a study belongs to the default one (``default_study_pk``).
    """

    class Platform(models.TextChoices):
        PROLIFIC = "prolific", "Prolific"
        MTURK = "mturk", "Amazon Mechanical Turk"
        GENERIC = "generic", "Any other (?pid=)"

    class Kind(models.TextChoices):
        COLLECTION = "collection", "Collection (rankings become training labels)"
        VALIDATION = "validation", "Validation (rankings judge conditions, never labels)"

    class Sampler(models.TextChoices):
        UNIFORM = "uniform", "Uniform (the occupation seen least, then the fewest rankings)"
        ACTIVE = "active", "Active (the model's D-optimal priorities, 20% exploration)"

    class Question(models.TextChoices):
        """What each task asks (``annotation.rankings.tiers``: the answers each accepts)."""

        RANK = "rank", "Rank all cards (a strict order)"
        RANK_TIES = "rank_ties", "Rank all cards, ties allowed"
        TOP_K = "top_k", "Order the k most stereotypical cards"
        BEST_WORST = "best_worst", "Pick the most and the least stereotypical card"
        PAIRWISE = "pairwise", "Compare two cards (or call them equal)"

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        OPEN = "open", "Open"
        CLOSED = "closed", "Closed"
        ARCHIVED = "archived", "Archived"

    # The lifecycle: from each status, the statuses staff may move a study to.
    TRANSITIONS = {
        Status.DRAFT: (Status.OPEN, Status.ARCHIVED),
        Status.OPEN: (Status.CLOSED,),
        Status.CLOSED: (Status.OPEN, Status.ARCHIVED),
        Status.ARCHIVED: (),
    }

    slug = models.SlugField(
        max_length=60, unique=True, help_text="The entry link is /join/{this slug}/."
    )
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.COLLECTION)
    status = models.CharField(
        max_length=20,
        choices=Status.choices,
        default=Status.OPEN,
        help_text="Only an open study admits participants and serves tasks.",
    )
    platform = models.CharField(max_length=20, choices=Platform.choices)
    task_size = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Items per task; blank: STEREORANK_TASK_SIZE."
    )
    overlap = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Rankings per task; blank: STEREORANK_TASK_OVERLAP."
    )
    question_format = models.CharField(
        max_length=20,
        choices=Question.choices,
        default=Question.RANK,
        db_default=Question.RANK,
        help_text="What each task asks; fixed once the study holds a ranking.",
    )
    question_k = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="top_k: how many cards are ordered (below task size)."
    )
    sampler = models.CharField(
        max_length=20,
        choices=Sampler.choices,
        default=Sampler.UNIFORM,
        help_text="How open tasks are ordered. Active: priorities the training side "
        "computes from the current model, after each new version and every few rankings.",
    )
    # Written by the training side's sampler (training/registry/sampling.py): what the current
    # priorities rest on, and when they were written.
    priorities_basis = models.CharField(max_length=300, blank=True, editable=False)
    priorities_updated_at = models.DateTimeField(null=True, blank=True, editable=False)
    shows_prompts = models.BooleanField(
        default=False,
        help_text="Validation studies: cards show their condition's text (blinded otherwise).",
    )
    tasks_per_participant = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Each participant's quota, in answers; blank: the "
        "default quota's time (STEREORANK_ANNOTATOR_QUOTA six-card rankings) in this format.",
    )
    minimum_rankings = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Answers stored before the completion code shows, also when tasks run out "
        "(at most the quota counts); blank: one six-card ranking's time in this format.",
    )
    open_signup = models.BooleanField(
        default=False,
        help_text="Anyone may create an account on the portal's sign-up page and rank in this "
        "study. Off: it is joined only by its entry link or an account staff create.",
    )
    completion_code = models.CharField(max_length=100, blank=True)
    completion_url = models.CharField(
        max_length=500,
        blank=True,
        help_text="Where participants go when done; {code} becomes the completion code. "
        "Blank on Prolific: https://app.prolific.com/submissions/complete?cc={code}.",
    )
    screen_out_code = models.CharField(max_length=100, blank=True)
    screen_out_url = models.CharField(
        max_length=500,
        blank=True,
        help_text="Where screened-out participants go; {code} becomes the screen-out code.",
    )
    gold_per_occupation = models.PositiveSmallIntegerField(
        default=1,
        help_text="Gold tasks (a reference order) built per occupation; 0 turns them off.",
    )
    checks_per_occupation = models.PositiveSmallIntegerField(
        default=1,
        help_text="Attention-check tasks built per occupation; 0 turns them off.",
    )
    quality_off_reason = models.TextField(
        blank=True,
        help_text="Why gold or attention-check tasks are off (required to turn them off).",
    )
    languages = models.JSONField(
        default=default_languages,
        blank=True,
        help_text="Codes of the languages participants may read the portal in, the first "
        'the default: e.g. ["en", "nl"]. Each must be one of the installation\'s languages.',
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "studies"
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(task_size__isnull=True) | models.Q(task_size__gte=2),
                name="study_task_size_at_least_two",
            ),
            models.CheckConstraint(
                condition=models.Q(overlap__isnull=True) | models.Q(overlap__gte=1),
                name="study_overlap_at_least_one",
            ),
            models.CheckConstraint(
                condition=models.Q(minimum_rankings__gte=1),  # blank (NULL) passes
                name="study_minimum_rankings_at_least_one",
            ),
            models.CheckConstraint(
                condition=(
                    models.Q(gold_per_occupation__gt=0, checks_per_occupation__gt=0)
                    | ~models.Q(quality_off_reason="")
                ),
                name="study_quality_off_has_a_reason",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_open(self) -> bool:
        """Admits new participants and serves tasks."""
        return self.status == self.Status.OPEN

    @property
    def default_language(self) -> str:
        """The study's first language: what a participant reads unless they choose."""
        return (self.languages or default_languages())[0]

    @property
    def makes_labels(self) -> bool:
        """A collection study's rankings become training labels; a validation study's never."""
        return self.kind == self.Kind.COLLECTION

    def clean(self) -> None:
        size = self.task_size or settings.STEREORANK["TASK_SIZE"]
        if problem := question_refusal(self.question_format, size, self.question_k):
            raise ValidationError({"question_format": problem[0].upper() + problem[1:] + "."})
        if self.kind == self.Kind.VALIDATION and self.question_format != self.Question.RANK:
            raise ValidationError(
                {"question_format": "A validation study asks for a strict order (rank)."}
            )
        if self.pk and self.question_changed_after_rankings():
            raise ValidationError(
                {"question_format": "The format is fixed once the study holds a ranking."}
            )
        if not self.languages:
            self.languages = default_languages()
        if problem := language_refusal(self.languages):
            raise ValidationError({"languages": problem[0].upper() + problem[1:] + "."})
        if self.minimum_rankings is not None and self.minimum_rankings < 1:
            raise ValidationError(
                {"minimum_rankings": "At least one ranking: the code pays for work done."}
            )
        for name in ("completion_url", "screen_out_url"):
            url = getattr(self, name)
            if url and not url.startswith("https://"):
                raise ValidationError({name: "Use an https:// address."})
        off = self.gold_per_occupation == 0 or self.checks_per_occupation == 0
        if off and not self.quality_off_reason.strip():
            raise ValidationError(
                {
                    "quality_off_reason": "Say why gold or attention-check tasks are off: "
                    "they are how the quality policy finds careless annotators."
                }
            )

    def question_changed_after_rankings(self) -> bool:
        """The format or k differs from the stored one while the study holds a ranking: its
        rankings would mean something else than its later ones."""
        stored = Study.objects.filter(pk=self.pk).values("question_format", "question_k").first()
        changed = stored and (stored["question_format"], stored["question_k"]) != (
            self.question_format,
            self.question_k,
        )
        return bool(changed) and self.tasks.filter(ranking_count__gt=0).exists()


def question_refusal(question: str, task_size: int, k: int | None) -> str:
    """Why tasks of ``task_size`` cards cannot be asked in ``question`` with ``k`` ("" when
    they can): one line, for ``create_study``, the admin and the staff API."""
    if question not in Study.Question.values:
        return f"unknown question format {question!r}; use one of {', '.join(Study.Question)}"
    if question == Study.Question.TOP_K:
        if k is None:
            return "top_k needs k, the number of cards ordered"
        if not 1 <= k < task_size - 1:
            return f"top_k needs 1 <= k < {task_size - 1} for tasks of {task_size} cards, not {k}"
    elif k is not None:
        return f"k is for top_k only, not {question}"
    if question == Study.Question.PAIRWISE and task_size != 2:
        return f"pairwise asks about 2 cards a task, not {task_size} (set task size 2)"
    if question == Study.Question.BEST_WORST and task_size < 3:
        return f"best_worst needs tasks of 3 or more cards, not {task_size}"
    return ""


def study_field(related_name: str) -> models.ForeignKey:
    """The foreign key by which a row belongs to one study (the default one unless named)."""
    return models.ForeignKey(
        Study, on_delete=models.PROTECT, related_name=related_name, default=default_study_pk
    )


class Participation(models.Model):
    """An annotator who came by a study's link.

    Its key is its own secret (``secret_hash``: SHA-256 of a random token that only the
    browser that joined holds, in a cookie, and the participant's resume link); the
    crowd platform's participant id is a recorded attribute, kept only as a keyed hash
    (``recruitment.external_id_hash``), never a key: a second device arriving with the
    same id gets a participation of its own, marked ``duplicate`` for the researchers
    (``annotation.participants.admission``). The submission ids are kept as given. All
    of it goes at erasure."""

    class Outcome(models.TextChoices):
        TAKING_PART = "", "Taking part"
        COMPLETED = "completed", "Completed"
        SCREENED_OUT = "screened_out", "Screened out"

    class ScreenOut(models.TextChoices):
        DECLINED_CONSENT = "declined_consent", "Declined consent"
        GROUP_FULL = "group_full", "Group full"
        EXCLUDED = "excluded", "Excluded by the quality checks"

    study = models.ForeignKey(Study, on_delete=models.PROTECT, related_name="participations")
    annotator = models.OneToOneField(
        "annotation.AnnotatorProfile", on_delete=models.CASCADE, related_name="participation"
    )
    external_id_hash = models.CharField(max_length=64)
    # SHA-256 of the participation's secret; null for a participation made before secrets
    # (it gets one on its next page in the session that already holds it).
    secret_hash = models.CharField(
        max_length=64, null=True, blank=True, unique=True, editable=False
    )
    duplicate = models.BooleanField(
        default=False,
        help_text="Another participation of this study came with the same crowd id first "
        "(a second device or browser): check it before paying twice.",
    )
    # Prolific SESSION_ID or MTurk assignmentId: a returning participant shows the same one.
    session_id = models.CharField(max_length=200, blank=True)
    # Prolific STUDY_ID or MTurk hitId, as the platform names its side of the study.
    platform_study_id = models.CharField(max_length=200, blank=True)
    started_at = models.DateTimeField(auto_now_add=True)
    outcome = models.CharField(max_length=20, choices=Outcome.choices, blank=True, default="")
    screen_out_reason = models.CharField(max_length=30, choices=ScreenOut.choices, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # When a screened-out participant followed the link back to the platform: until then a
    # declined consent can be taken back (``recruitment.reconsider``).
    left_at = models.DateTimeField(null=True, blank=True)
    # The language the participant reads the portal in (one of the study's languages):
    # chosen on arrival, changed with the language switch.
    language = models.CharField(max_length=16, blank=True, default="", db_default="")

    class Meta:
        ordering = ["-started_at"]
        constraints = [
            # One first participation per crowd id and study; later ones are duplicates.
            models.UniqueConstraint(
                fields=["study", "external_id_hash"],
                condition=models.Q(duplicate=False),
                name="one_first_participation_per_crowd_id",
            )
        ]

    def __str__(self) -> str:
        return f"participant {self.annotator_id} in {self.study_id}"
