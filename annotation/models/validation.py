"""Models of a validation study's conditions: what each condition's images were made from.

A validation study (``Study``) compares two **conditions**, a ``baseline`` (e.g.
the original prompts) and a ``treatment`` (e.g. the active version's rewrites).
Each condition keeps, per prompt of the study, the text its images are made
from and where that text came from (``ConditionPrompt``: the version, its score
and threshold, the rewriter, or the file), frozen when the condition is made.
An imported or placeholder image is an ``Item`` (the thing annotators rank)
tied to its condition's prompt and seed by ``ConditionImage``. Writes:
``annotation.validation.conditions`` (and ``scoring.validation`` for the optimiser's).

This module imports nothing from the app (other models are named by string).
"""

from django.db import models
from django.db.models import Q


class Condition(models.Model):
    """One arm of a validation study: its role, its source and its provenance."""

    class Role(models.TextChoices):
        BASELINE = "baseline", "Baseline"
        TREATMENT = "treatment", "Treatment"

    class Source(models.TextChoices):
        ORIGINAL = "original", "The prompts as written"
        OPTIMISED = "optimised", "A version's optimiser"
        FILE = "file", "Rewrites given in a file"

    study = models.ForeignKey(
        "annotation.Study", on_delete=models.CASCADE, related_name="conditions"
    )
    name = models.SlugField(max_length=40, help_text="e.g. original, optimised, v3")
    role = models.CharField(max_length=20, choices=Role.choices)
    source = models.CharField(max_length=20, choices=Source.choices)
    # The checkpoint version whose optimiser (or scores) made this condition, if any.
    version = models.PositiveIntegerField(null=True, blank=True)
    provenance = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study_id", "role"]
        constraints = [
            models.UniqueConstraint(fields=["study", "name"], name="condition_name_per_study"),
            models.UniqueConstraint(fields=["study", "role"], name="one_condition_per_role"),
            models.CheckConstraint(
                condition=~Q(source="optimised") | Q(version__isnull=False),
                name="optimised_condition_names_its_version",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.role})"


class ConditionPrompt(models.Model):
    """The text one condition's images of one study prompt are made from, frozen.

    ``prompt`` is the catalogue's original prompt it stands for (its occupation
    groups the images into tasks); ``text`` is the condition's version of it.
    ``score`` is the condition's version's score of ``text`` (None when none
    scored it); ``provenance`` holds the rest (original score, threshold,
    rewriter, whether the rewrite passed, the file row).
    """

    condition = models.ForeignKey(Condition, on_delete=models.CASCADE, related_name="prompts")
    prompt = models.ForeignKey(
        "annotation.Prompt", on_delete=models.PROTECT, related_name="condition_prompts"
    )
    text = models.TextField()
    score = models.FloatField(null=True, blank=True)
    provenance = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["condition_id", "prompt_id"]
        constraints = [
            models.UniqueConstraint(fields=["condition", "prompt"], name="one_text_per_condition")
        ]

    def __str__(self) -> str:
        return self.text


class ConditionImage(models.Model):
    """An item (image) made from one condition's prompt with one seed."""

    item = models.OneToOneField(
        "annotation.Item", on_delete=models.CASCADE, related_name="condition_image"
    )
    prompt = models.ForeignKey(ConditionPrompt, on_delete=models.PROTECT, related_name="images")
    seed = models.PositiveIntegerField()

    class Meta:
        ordering = ["prompt_id", "seed"]
        constraints = [
            models.UniqueConstraint(fields=["prompt", "seed"], name="one_image_per_prompt_and_seed")
        ]

    def __str__(self) -> str:
        return f"{self.prompt.condition.name} seed {self.seed}: item {self.item_id}"
