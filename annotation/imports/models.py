"""Where imported rankings came from, and on what basis they may count.

- ``ImportSource``: a study's source of rankings in another tool (the tool and the source
  study, named), with the **basis**: an owner's statement that the source study's consent
  covers this use, who recorded it and when, and when it was withdrawn. Imported people
  gave us no consent: their rankings count exactly while their source's basis is recorded
  and not withdrawn (``annotation.rankings.selectors.consent_stands``, the one definition).
- ``ImportBatch``: one file imported from a source, by its SHA-256 (the same file twice in a
  study is one batch: a second import adds nothing), what it added and who imported it.
- ``ImportedAnnotator``: an annotator profile made for a person of a source, with the keyed
  hash of the source's id for them (``services.source_hash``; the raw id is never kept),
  blanked when the person is erased, and the batch that first brought them.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q


class ImportSource(models.Model):
    """A study's source of imported rankings, with the basis they count on (module docstring)."""

    class Tool(models.TextChoices):
        LABEL_STUDIO = "label-studio", "Label Studio"
        ARGILLA = "argilla", "Argilla"
        POTATO = "potato", "Potato"

    study = models.ForeignKey(
        "annotation.Study", on_delete=models.PROTECT, related_name="import_sources"
    )
    tool = models.CharField(max_length=20, choices=Tool.choices)
    name = models.CharField(
        max_length=300, help_text="The source study, named as its owners name it."
    )
    basis = models.TextField(
        blank=True,
        help_text="The owner's statement that the source study's consent covers this use.",
    )
    basis_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name="basis recorded by",
    )
    basis_recorded_at = models.DateTimeField(null=True, blank=True)
    basis_withdrawn_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study_id", "tool", "name"]
        constraints = [
            models.UniqueConstraint(fields=["study", "tool", "name"], name="one_source_per_name"),
            models.CheckConstraint(
                condition=Q(basis="", basis_recorded_at__isnull=True)
                | (~Q(basis="") & Q(basis_recorded_at__isnull=False)),
                name="basis_recorded_with_its_statement",
            ),
            models.CheckConstraint(
                condition=Q(basis_withdrawn_at__isnull=True) | Q(basis_recorded_at__isnull=False),
                name="basis_withdrawn_only_once_recorded",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_tool_display()}: {self.name}"

    @property
    def basis_stands(self) -> bool:
        return self.basis_recorded_at is not None and self.basis_withdrawn_at is None


class ImportBatch(models.Model):
    """One file imported from a source: its SHA-256 (once per study), what it added."""

    source = models.ForeignKey(ImportSource, on_delete=models.PROTECT, related_name="batches")
    study = models.ForeignKey(
        "annotation.Study", on_delete=models.PROTECT, related_name="import_batches"
    )
    file_sha256 = models.CharField(max_length=64)
    file_name = models.CharField(max_length=255, help_text="The file's name as given.")
    rankings = models.PositiveIntegerField(default=0, help_text="Rankings this file added.")
    annotators = models.PositiveIntegerField(default=0, help_text="Annotators it added.")
    tasks = models.PositiveIntegerField(default=0, help_text="Tasks it created.")
    skipped = models.PositiveIntegerField(
        default=0,
        help_text="Answers not imported: cancelled, drafts, no ranking, or a task "
        "their annotator had answered already.",
    )
    imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    imported_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-imported_at"]
        verbose_name_plural = "import batches"
        constraints = [
            models.UniqueConstraint(fields=["study", "file_sha256"], name="one_file_once_per_study")
        ]

    def __str__(self) -> str:
        return f"{self.file_name} ({self.source})"


class ImportedAnnotator(models.Model):
    """An annotator profile made for a person of a source (module docstring)."""

    profile = models.OneToOneField(
        "annotation.AnnotatorProfile", on_delete=models.CASCADE, related_name="imported"
    )
    source = models.ForeignKey(ImportSource, on_delete=models.PROTECT, related_name="annotators")
    batch = models.ForeignKey(
        ImportBatch,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="The first to bring them.",
    )
    source_hash = models.CharField(
        max_length=64, blank=True, help_text="Keyed hash of the source's id; blank once erased."
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["source", "source_hash"],
                condition=~Q(source_hash=""),
                name="one_profile_per_source_person",
            )
        ]

    def __str__(self) -> str:
        return f"imported annotator {self.profile_id}"
