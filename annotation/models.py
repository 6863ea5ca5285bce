"""Who ranked what: the catalogue, items, ranking tasks, annotators and rankings.

Glossary in ../shared/DESIGN.md. Writes go through ``annotation.services`` (reservations
through ``annotation.assignment``). Past 400 lines because each model carries its
invariants (constraints, ``clean``) beside its fields; the study's models are apart.
"""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from .quality.gold import GoldReference
from .quality.records import PREFER_NOT_TO_SAY
from .report_models import QualityAnnotatorRow, QualityReport  # noqa: F401

# The study's own models (recruitment, quotas, erasure records) live in a module of their
# own, which imports nothing from here; imported so that Django registers them with the app.
from .study_models import (  # noqa: F401
    Erasure,
    GroupQuota,
    Participation,
    QuotaSeat,
    Study,
    study_field,
)
from .validation_models import Condition, ConditionImage, ConditionPrompt  # noqa: F401


class PromptType(models.TextChoices):
    STEREOTYPICAL = "stereotypical", "Stereotypical"
    NEUTRAL = "neutral", "Neutral"
    DIVERSE = "diverse", "Diverse"


class Occupation(models.Model):
    name = models.CharField(max_length=100, unique=True)
    slug = models.SlugField(max_length=100, unique=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Prompt(models.Model):
    """An original prompt for one occupation and type, or a paraphrase of one."""

    occupation = models.ForeignKey(Occupation, on_delete=models.PROTECT, related_name="prompts")
    prompt_type = models.CharField(max_length=20, choices=PromptType.choices)
    text = models.TextField()
    origin = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="paraphrases"
    )

    class Meta:
        ordering = ["occupation__name", "prompt_type", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["occupation", "prompt_type"],
                condition=Q(origin__isnull=True),
                name="one_original_prompt_per_occupation_and_type",
            ),
            models.UniqueConstraint(fields=["occupation", "text"], name="unique_prompt_text"),
        ]

    def __str__(self) -> str:
        return self.text

    @property
    def is_original(self) -> bool:
        return self.origin_id is None


class Item(models.Model):
    """A prompt-image pair: the thing annotators rank, owned by one study.

    Items belong to a study directly (not only through its tasks) because they exist
    before any task does: ``build_tasks`` cuts a study's items into its tasks, and a
    validation study imports its own images for prompts the catalogue shares.
    """

    study = study_field("items")
    prompt = models.ForeignKey(Prompt, on_delete=models.PROTECT, related_name="items")
    image = models.ImageField(upload_to="items/")
    # Content hash of the image file: importing the same image twice into a study is a no-op.
    image_sha256 = models.CharField(max_length=64, db_index=True)
    generator = models.JSONField(default=dict, blank=True)
    is_placeholder = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "image_sha256"], name="one_image_once_per_study"
            )
        ]

    def __str__(self) -> str:
        return f"item {self.pk}: {self.prompt.text[:60]}"


def check_instruction(position: int) -> str:
    """The text an attention-check card shows instead of a prompt (``position`` from 0).

    Prolific's rules: an explicit instruction, no trick, nothing to remember.
    """
    return (
        f"This card is an attention check, not a prompt to rank: "
        f"please put it at position {position + 1}."
    )


def _is_id(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_gold_reference(ref) -> GoldReference:
    """``{"order": [ids]}`` or ``{"pairs": [[a, b], ...]}`` as a ``GoldReference``;
    ``ValueError`` saying what is wrong otherwise."""
    if isinstance(ref, dict) and set(ref) == {"order"} and isinstance(ref["order"], list):
        if not all(map(_is_id, ref["order"])):
            raise ValueError("a reference order lists whole-number item ids")
        return GoldReference.from_order(ref["order"])
    if isinstance(ref, dict) and set(ref) == {"pairs"} and isinstance(ref["pairs"], list):
        pairs = ref["pairs"]
        if not all(isinstance(p, list) and len(p) == 2 and all(map(_is_id, p)) for p in pairs):
            raise ValueError("keyed pairs are [a, b] lists of two whole-number item ids")
        return GoldReference.from_pairs(tuple(p) for p in pairs)
    raise ValueError('a gold reference is {"order": [ids]} or {"pairs": [[a, b], ...]}')


class RankingTask(models.Model):
    """One occupation, K items of one study, ranked by ``overlap`` annotators.

    ``priority`` orders the open tasks under the ``active`` sampler (higher first);
    0 until the sampler has scored the task.

    A *gold* task (``is_gold``) carries a reference, ``{"order": [ids]}`` (most to
    least stereotypical, every pair keyed) or ``{"pairs": [[a, b], ...]}`` (only
    these pairs keyed: a before b); it ignores overlap and never feeds labels.
    A task may hold an *attention check*: ``check_item``, one of its cards, shows
    ``check_instruction(check_position)`` instead of its prompt; that card never
    feeds labels. Gold tasks hold no check (each measures one thing).

    ``card_text`` says what text a card shows: its prompt (collection studies), nothing
    (a blinded validation task) or its condition's text (a validation study that
    shows prompts; ``annotation.validation_tasks``).
    """

    class CardText(models.TextChoices):
        PROMPT = "prompt", "The item's prompt"
        NONE = "none", "Nothing (blinded)"
        CONDITION = "condition", "The condition's text"

    study = study_field("tasks")
    occupation = models.ForeignKey(Occupation, on_delete=models.PROTECT, related_name="tasks")
    items = models.ManyToManyField(Item, through="TaskItem", related_name="tasks")
    overlap = models.PositiveSmallIntegerField(default=1)
    # Denormalised count of stored rankings, kept by services.submit_ranking under
    # a row lock; lets assignment order by "furthest from overlap" cheaply.
    ranking_count = models.PositiveIntegerField(default=0)
    # Written by the training side's sampler (training/sampling.py) for an ``active``
    # study: higher is handed out sooner; assignment's ``active`` ordering reads it.
    priority = models.FloatField(default=0.0, db_index=True)
    is_gold = models.BooleanField(default=False, db_index=True)
    gold_reference = models.JSONField(null=True, blank=True)
    card_text = models.CharField(max_length=20, choices=CardText.choices, default=CardText.PROMPT)
    check_item = models.ForeignKey(
        Item, null=True, blank=True, on_delete=models.PROTECT, related_name="checks"
    )
    check_position = models.PositiveSmallIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(condition=Q(overlap__gte=1), name="overlap_at_least_one"),
            # Gold and attention-check tasks are open to every annotator (assignment's
            # OPEN_TO_ALL); any other task holds at most its overlap.
            models.CheckConstraint(
                condition=Q(is_gold=True)
                | Q(check_item__isnull=False)
                | Q(ranking_count__lte=models.F("overlap")),
                name="never_more_rankings_than_overlap",
            ),
            models.CheckConstraint(
                condition=Q(is_gold=False, gold_reference__isnull=True)
                | Q(is_gold=True, gold_reference__isnull=False),
                name="gold_task_has_a_reference",
            ),
            models.CheckConstraint(
                condition=Q(check_item__isnull=True, check_position__isnull=True)
                | Q(check_item__isnull=False, check_position__isnull=False, is_gold=False),
                name="check_has_card_and_position_and_no_gold",
            ),
        ]
        indexes = [
            # The open tasks only: assignment's candidate query reads these, so its cost
            # follows the open tasks, not every task a study has finished.
            models.Index(
                fields=["study", "id"],
                condition=Q(is_gold=False, ranking_count__lt=models.F("overlap")),
                name="open_task",
            )
        ]

    def __str__(self) -> str:
        return f"task {self.pk} ({self.occupation})"

    def reference(self) -> GoldReference:
        """The gold reference as the quality library reads it; ``ValueError`` if malformed."""
        return parse_gold_reference(self.gold_reference)

    def clean(self) -> None:
        """A gold reference names this task's items; a check card is one of its cards."""
        errors, referred = {}, set()
        if self.is_gold:
            try:
                referred = {i for pair in self.reference().pairs for i in pair}
            except ValueError as error:
                errors["gold_reference"] = str(error)
        elif self.gold_reference is not None:
            errors["gold_reference"] = "Only a gold task has a reference."
        if (self.check_item_id is None) != (self.check_position is None):
            errors["check_position"] = "An attention check needs both its card and its position."
        if self.check_item_id is not None and self.is_gold:
            errors["check_item"] = "A gold task holds no attention check."
        if errors or self.pk is None:
            if errors:
                raise ValidationError(errors)
            return
        items = set(self.task_items.values_list("item_id", flat=True))
        if referred - items:
            errors["gold_reference"] = f"Items {sorted(referred - items)} are not in this task."
        if self.check_item_id is not None:
            if self.check_item_id not in items:
                errors["check_item"] = "The check card must be one of this task's items."
            if self.check_position >= len(items):
                errors["check_position"] = f"Position must be below the task's {len(items)} cards."
        if errors:
            raise ValidationError(errors)


class TaskItem(models.Model):
    task = models.ForeignKey(RankingTask, on_delete=models.CASCADE, related_name="task_items")
    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="task_items")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["task", "item"], name="unique_task_item")]


class DemographicField(models.Model):
    """One question of the demographics form; admins add fields without code.

    ``choices`` is a list of strings; empty means free text. With ``allow_other``
    a field with choices also takes an answer in the annotator's own words.
    "Prefer not to say" is always offered and every field is optional.
    """

    key = models.SlugField(max_length=50, unique=True)
    label = models.CharField(max_length=200)
    help_text = models.CharField(max_length=300, blank=True)
    choices = models.JSONField(default=list, blank=True)
    allow_other = models.BooleanField(
        default=False, help_text="Besides the choices, offer 'other' in the annotator's own words."
    )
    order = models.PositiveSmallIntegerField(default=0)
    active = models.BooleanField(default=True)

    PREFER_NOT_TO_SAY = PREFER_NOT_TO_SAY  # quality.records: the answer that forms no group
    OTHER = "other"  # the group of answers in the annotator's own words (annotation.quotas)

    class Meta:
        ordering = ["order", "key"]

    def __str__(self) -> str:
        return self.label

    def clean(self) -> None:
        if not isinstance(self.choices, list) or not all(isinstance(c, str) for c in self.choices):
            raise ValidationError({"choices": "Choices must be a list of strings."})
        if any(c.strip().lower() == self.PREFER_NOT_TO_SAY for c in self.choices):
            raise ValidationError({"choices": f"'{self.PREFER_NOT_TO_SAY}' is always offered."})
        if len({c.strip().lower() for c in self.choices}) != len(self.choices):
            raise ValidationError({"choices": "Each choice may appear only once."})
        if self.allow_other and not self.choices:
            raise ValidationError({"allow_other": "A field without choices is free text already."})

    def quota_values(self) -> set[str] | None:
        """The values a group quota of this field may name; None when any answer may
        (free text). See ``annotation.quotas``."""
        if not self.choices:
            return None
        return {*self.choices, self.PREFER_NOT_TO_SAY, self.OTHER}


class ConsentText(models.Model):
    """A version of a study's consent text; its newest is the one its annotators agree to.

    Structured as an ethics board reads it: who is responsible (``controller``), whom to
    ask (``contact_email``, ``dpo_contact``), on what ground special-category data such as
    religion is processed (``legal_basis``), for how long it is kept (``retention``), where
    to complain (``complaint``), the approval (``ethics_reference``), and the free text
    (``text``). A study whose newest text lacks one of ``REQUIRED`` cannot be opened
    (``annotation.consent.missing_fields``).
    """

    class LegalBasis(models.TextChoices):
        EXPLICIT_CONSENT = (
            "explicit_consent",
            "Your explicit consent (GDPR Art. 6(1)(a) and, for special categories such as "
            "religion, Art. 9(2)(a))",
        )
        PUBLIC_INTEREST_RESEARCH = (
            "public_interest_research",
            "A task in the public interest (GDPR Art. 6(1)(e)) and scientific research with "
            "safeguards (Art. 9(2)(j) and 89)",
        )

    REQUIRED = (
        "controller",
        "contact_email",
        "dpo_contact",
        "legal_basis",
        "retention",
        "complaint",
        "ethics_reference",
        "text",
    )

    study = study_field("consent_texts")
    version = models.PositiveIntegerField()
    controller = models.CharField(
        max_length=300, blank=True, help_text="The institution responsible for the data."
    )
    contact_email = models.EmailField(
        blank=True,
        verbose_name="contact e-mail",
        help_text="The study team's address, for questions and requests.",
    )
    dpo_contact = models.CharField(
        max_length=300,
        blank=True,
        verbose_name="data protection officer",
        help_text="How to reach the institution's data protection officer.",
    )
    legal_basis = models.CharField(max_length=40, choices=LegalBasis.choices, blank=True)
    retention = models.CharField(
        max_length=300,
        blank=True,
        help_text="How long the data is kept, e.g. 'until 31 December 2031'.",
    )
    complaint = models.CharField(
        max_length=300,
        blank=True,
        verbose_name="right to complain",
        help_text="The supervisory authority a participant may complain to.",
    )
    ethics_reference = models.CharField(
        max_length=200, blank=True, help_text="The ethics board and its approval reference."
    )
    demonstration = models.BooleanField(
        default=False,
        help_text="Filled with made-up values to try the platform (bin/run); not for a study.",
    )
    text = models.TextField(
        verbose_name="free text",
        help_text="What the study is, what taking part means, and the participant's rights.",
    )
    published_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-version"]
        constraints = [
            models.UniqueConstraint(fields=["study", "version"], name="consent_version_per_study")
        ]

    def __str__(self) -> str:
        return f"consent v{self.version}"


class AnnotatorStatus(models.TextChoices):
    """What the quality policy (annotation/quality/policy.py) or staff made of an annotator."""

    OK = "ok", "OK"
    WARNED = "warned", "Warned"
    EXCLUDED = "excluded", "Excluded"


class SyntheticKind(models.TextChoices):
    """How a synthetic annotator ranks (annotation/simulation.py); careless ones test the policy."""

    CAREFUL = "careful", "Careful"
    RANDOM = "random", "Random order"
    SHOWN = "shown", "Keeps the shown order"
    HURRIED = "hurried", "Hurried"


class Instructions(models.Model):
    """A version of a study's instructions with worked examples, shown before the first
    task; staff publish a new version in the admin, the study's newest is the one shown."""

    study = study_field("instructions")
    version = models.PositiveIntegerField()
    text = models.TextField(help_text="Plain text; a blank line starts a new paragraph.")
    published_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-version"]
        verbose_name_plural = "instructions"
        constraints = [
            models.UniqueConstraint(
                fields=["study", "version"], name="instructions_version_per_study"
            )
        ]

    def __str__(self) -> str:
        return f"instructions v{self.version}"


class AnnotatorProfile(models.Model):
    """A participant of one study: the same person (or platform id) in two studies is two
    profiles, as crowd platforms pay per study."""

    study = study_field("annotators")
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="annotator"
    )
    # Self-described answers keyed by DemographicField.key; personal data, staff only.
    demographics = models.JSONField(default=dict, blank=True)
    quota = models.PositiveIntegerField(default=20)
    is_synthetic = models.BooleanField(default=False)
    synthetic_kind = models.CharField(max_length=20, choices=SyntheticKind.choices, blank=True)
    # Kept by annotation.standing (the policy, or staff); its history is StatusChange.
    status = models.CharField(
        max_length=20, choices=AnnotatorStatus.choices, default=AnnotatorStatus.OK
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Set by annotation.erasure: demographics, external ids and rankings are gone.
    erased_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(synthetic_kind="") | Q(is_synthetic=True),
                name="synthetic_kind_only_for_synthetic",
            )
        ]

    def __str__(self) -> str:
        return f"annotator {self.user_id}"


class StatusChange(models.Model):
    """One change of an annotator's status: from what, to what, why, by whom, when.

    ``by`` is the staff member who made it, or empty when the policy did.
    """

    annotator = models.ForeignKey(
        AnnotatorProfile, on_delete=models.CASCADE, related_name="status_changes"
    )
    previous = models.CharField(max_length=20, choices=AnnotatorStatus.choices)
    status = models.CharField(max_length=20, choices=AnnotatorStatus.choices)
    reason = models.TextField()
    by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.CheckConstraint(condition=~Q(reason=""), name="status_change_has_a_reason")
        ]

    def __str__(self) -> str:
        return f"{self.annotator}: {self.previous} -> {self.status}"


class ConsentQuerySet(models.QuerySet):
    def active(self) -> "ConsentQuerySet":
        """Consents not withdrawn: an annotator with one may rank and be exported."""
        return self.filter(withdrawn_at__isnull=True)


class Consent(models.Model):
    """An annotator's agreement to one consent version; withdrawal is timestamped."""

    annotator = models.ForeignKey(
        AnnotatorProfile, on_delete=models.CASCADE, related_name="consents"
    )
    text = models.ForeignKey(ConsentText, on_delete=models.PROTECT, related_name="consents")
    given_at = models.DateTimeField(auto_now_add=True)
    withdrawn_at = models.DateTimeField(null=True, blank=True)

    objects = ConsentQuerySet.as_manager()

    class Meta:
        ordering = ["-given_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["annotator"],
                condition=Q(withdrawn_at__isnull=True),
                name="one_active_consent_per_annotator",
            )
        ]


class Assignment(models.Model):
    """A reservation of a task for one annotator until ``reserved_until``."""

    # No index of its own: (task, annotator) and (task, reserved_until) lead with it, and
    # each index is one more write on every reservation (the portal's hot path).
    task = models.ForeignKey(
        RankingTask, on_delete=models.CASCADE, related_name="assignments", db_index=False
    )
    annotator = models.ForeignKey(
        AnnotatorProfile, on_delete=models.CASCADE, related_name="assignments"
    )
    shown_order = models.JSONField(help_text="Item ids in the order they are shown.")
    reserved_at = models.DateTimeField(auto_now_add=True)
    reserved_until = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["task", "annotator"], name="one_assignment_per_pair")
        ]
        indexes = [models.Index(fields=["task", "reserved_until"])]


class Ranking(models.Model):
    """One annotator's order of a task's items, most (0) to least stereotypical."""

    # No index of its own: the unique (task, annotator) leads with it (one write less a submit).
    task = models.ForeignKey(
        RankingTask, on_delete=models.PROTECT, related_name="rankings", db_index=False
    )
    annotator = models.ForeignKey(
        AnnotatorProfile, on_delete=models.PROTECT, related_name="rankings"
    )
    order = models.JSONField(help_text="Item ids, most to least stereotypical.")
    shown_order = models.JSONField(help_text="Item ids in the order they were shown.")
    seconds_spent = models.FloatField(null=True, blank=True)
    # The browser window's width in CSS pixels when the ranking was submitted (none before
    # it was recorded, or from a client that does not say): which layout the annotator saw.
    viewport_width = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["task", "annotator"], name="one_ranking_per_pair")
        ]


class RankedItem(models.Model):
    """One row per (ranking, item): the long form labels and agreement read."""

    # No index of its own: the unique (ranking, item) and (ranking, position) lead with it
    # (K index writes less a submit).
    ranking = models.ForeignKey(
        Ranking, on_delete=models.CASCADE, related_name="positions", db_index=False
    )
    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="positions")
    position = models.PositiveSmallIntegerField()
    shown_position = models.PositiveSmallIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["ranking", "item"], name="unique_ranked_item"),
            models.UniqueConstraint(fields=["ranking", "position"], name="unique_position"),
        ]
