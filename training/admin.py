"""Admin: read the pipeline's records. Writes (snapshot, train, promote, roll back) go
through the dashboards, the API or the commands, which call ``training.services``;
here the records are read-only, so no invariant can be bypassed by a form."""

from django.contrib import admin

from core.admin import ReadOnlyAdmin

from . import models, selectors


@admin.register(models.DatasetSnapshot)
class DatasetSnapshotAdmin(ReadOnlyAdmin):
    list_display = [
        "id",
        "created_at",
        "include_synthetic",
        "ranking_count",
        "example_count",
        "train_count",
        "eval_count",
        "content_hash",
        "erasures_after",
    ]
    list_filter = ["include_synthetic"]
    exclude = ["examples", "group_labels"]

    def get_queryset(self, request):
        return selectors.snapshots()

    @admin.display(description="erasures since")
    def erasures_after(self, snapshot: models.DatasetSnapshot) -> int:
        """Annotators erased after this snapshot was frozen (their rankings are in it)."""
        return snapshot.erasures_after


@admin.register(models.Augmentation)
class AugmentationAdmin(ReadOnlyAdmin):
    list_display = ["id", "snapshot", "backend", "model", "n", "status", "created_at"]
    list_filter = ["backend", "status"]


@admin.register(models.Paraphrase)
class ParaphraseAdmin(ReadOnlyAdmin):
    list_display = ["id", "origin_key", "text", "backend", "template", "cosine"]
    list_filter = ["backend"]
    search_fields = ["text", "origin_key"]


@admin.register(models.TrainingRun)
class TrainingRunAdmin(ReadOnlyAdmin):
    list_display = [
        "id",
        "snapshot",
        "encoder",
        "status",
        "epoch",
        "epochs",
        "attempts",
        "created_at",
    ]
    list_filter = ["status", "encoder"]


@admin.register(models.Checkpoint)
class CheckpointAdmin(ReadOnlyAdmin):
    list_display = ["version", "status", "rho", "snapshot", "encoder_name", "created_at"]
    list_filter = ["status", "encoder_name"]

    @admin.display(description="rho (own snapshot)")
    def rho(self, checkpoint: models.Checkpoint) -> float | None:
        return checkpoint.metrics.get("spearman")


@admin.register(models.Evaluation)
class EvaluationAdmin(ReadOnlyAdmin):
    list_display = ["id", "checkpoint", "snapshot", "created_at"]
    exclude = ["predictions"]


@admin.register(models.RegistryEvent)
class RegistryEventAdmin(ReadOnlyAdmin):
    list_display = ["at", "action", "checkpoint", "previous", "user", "reason"]
    list_filter = ["action"]


@admin.register(models.RetrainDecision)
class RetrainDecisionAdmin(ReadOnlyAdmin):
    list_display = ["at", "schedule", "decision", "reason", "snapshot", "run", "checkpoint"]
    list_filter = ["decision", "schedule"]


@admin.register(models.EncoderGate)
class EncoderGateAdmin(ReadOnlyAdmin):
    list_display = ["at", "checkpoint", "backend", "quantization", "snapshot", "passed"]
    list_filter = ["passed", "backend", "quantization"]


@admin.register(models.LearningCurve)
class LearningCurveAdmin(ReadOnlyAdmin):
    list_display = ["snapshot", "status", "draws", "n_rankings", "finished_at"]
    list_filter = ["status"]
