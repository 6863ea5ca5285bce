"""The catalogue: occupations, their prompts (originals and paraphrases) and items (a prompt's
image), the things annotators rank."""

from django.db import models
from django.db.models import Q

from annotation.models.studies import study_field


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
