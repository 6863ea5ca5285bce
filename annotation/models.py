"""Who ranked what: the catalogue, items, ranking tasks, annotators and rankings.

Glossary in ../shared/DESIGN.md. Writes go through ``annotation.services``.
"""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q


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
    """A prompt-image pair: the thing annotators rank."""

    prompt = models.ForeignKey(Prompt, on_delete=models.PROTECT, related_name="items")
    image = models.ImageField(upload_to="items/")
    # Content hash of the image file: importing the same image twice is a no-op.
    image_sha256 = models.CharField(max_length=64, unique=True)
    generator = models.JSONField(default=dict, blank=True)
    is_placeholder = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"item {self.pk}: {self.prompt.text[:60]}"


class RankingTask(models.Model):
    """One occupation, K items, ranked by ``overlap`` annotators."""

    occupation = models.ForeignKey(Occupation, on_delete=models.PROTECT, related_name="tasks")
    items = models.ManyToManyField(Item, through="TaskItem", related_name="tasks")
    overlap = models.PositiveSmallIntegerField(default=1)
    # Denormalised count of stored rankings, kept by services.submit_ranking under
    # a row lock; lets assignment order by "furthest from overlap" cheaply.
    ranking_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(condition=Q(overlap__gte=1), name="overlap_at_least_one"),
            models.CheckConstraint(
                condition=Q(ranking_count__lte=models.F("overlap")),
                name="never_more_rankings_than_overlap",
            ),
        ]

    def __str__(self) -> str:
        return f"task {self.pk} ({self.occupation})"


class TaskItem(models.Model):
    task = models.ForeignKey(RankingTask, on_delete=models.CASCADE, related_name="task_items")
    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="task_items")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["task", "item"], name="unique_task_item")]


class DemographicField(models.Model):
    """One question of the demographics form; admins add fields without code.

    ``choices`` is a list of strings; empty means free text. "Prefer not to say"
    is always offered and every field is optional.
    """

    key = models.SlugField(max_length=50, unique=True)
    label = models.CharField(max_length=200)
    help_text = models.CharField(max_length=300, blank=True)
    choices = models.JSONField(default=list, blank=True)
    order = models.PositiveSmallIntegerField(default=0)
    active = models.BooleanField(default=True)

    PREFER_NOT_TO_SAY = "prefer not to say"

    class Meta:
        ordering = ["order", "key"]

    def __str__(self) -> str:
        return self.label

    def clean(self) -> None:
        if not isinstance(self.choices, list) or not all(isinstance(c, str) for c in self.choices):
            raise ValidationError({"choices": "Choices must be a list of strings."})


class ConsentText(models.Model):
    """A version of the consent text; the newest is the one annotators agree to."""

    version = models.PositiveIntegerField(unique=True)
    text = models.TextField()
    published_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-version"]

    def __str__(self) -> str:
        return f"consent v{self.version}"


class Instructions(models.Model):
    """A version of the instructions with worked examples, shown before the first task;
    staff publish a new version in the admin, the newest is the one shown."""

    version = models.PositiveIntegerField(unique=True)
    text = models.TextField(help_text="Plain text; a blank line starts a new paragraph.")
    published_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-version"]
        verbose_name_plural = "instructions"

    def __str__(self) -> str:
        return f"instructions v{self.version}"


class AnnotatorProfile(models.Model):
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="annotator"
    )
    # Self-described answers keyed by DemographicField.key; personal data, staff only.
    demographics = models.JSONField(default=dict, blank=True)
    quota = models.PositiveIntegerField(default=20)
    is_synthetic = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"annotator {self.user_id}"


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

    task = models.ForeignKey(RankingTask, on_delete=models.CASCADE, related_name="assignments")
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

    task = models.ForeignKey(RankingTask, on_delete=models.PROTECT, related_name="rankings")
    annotator = models.ForeignKey(
        AnnotatorProfile, on_delete=models.PROTECT, related_name="rankings"
    )
    order = models.JSONField(help_text="Item ids, most to least stereotypical.")
    shown_order = models.JSONField(help_text="Item ids in the order they were shown.")
    seconds_spent = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["task", "annotator"], name="one_ranking_per_pair")
        ]


class RankedItem(models.Model):
    """One row per (ranking, item): the long form labels and agreement read."""

    ranking = models.ForeignKey(Ranking, on_delete=models.CASCADE, related_name="positions")
    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="positions")
    position = models.PositiveSmallIntegerField()
    shown_position = models.PositiveSmallIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["ranking", "item"], name="unique_ranked_item"),
            models.UniqueConstraint(fields=["ranking", "position"], name="unique_position"),
        ]
