"""Admin: staff manage the catalogue, tasks, demographic fields, consent texts,
instructions."""

from django.contrib import admin

from . import models


@admin.register(models.Occupation)
class OccupationAdmin(admin.ModelAdmin):
    list_display = ["name", "slug"]
    search_fields = ["name"]
    prepopulated_fields = {"slug": ["name"]}


@admin.register(models.Prompt)
class PromptAdmin(admin.ModelAdmin):
    list_display = ["text", "occupation", "prompt_type", "origin"]
    list_filter = ["prompt_type", "occupation"]
    search_fields = ["text"]
    raw_id_fields = ["origin"]


@admin.register(models.Item)
class ItemAdmin(admin.ModelAdmin):
    list_display = ["id", "prompt", "is_placeholder", "created_at"]
    list_filter = ["is_placeholder", "prompt__prompt_type"]
    raw_id_fields = ["prompt"]


class TaskItemInline(admin.TabularInline):
    model = models.TaskItem
    raw_id_fields = ["item"]
    extra = 0


@admin.register(models.RankingTask)
class RankingTaskAdmin(admin.ModelAdmin):
    list_display = ["id", "occupation", "overlap", "ranking_count", "created_at"]
    list_filter = ["occupation"]
    readonly_fields = ["ranking_count"]
    inlines = [TaskItemInline]


@admin.register(models.DemographicField)
class DemographicFieldAdmin(admin.ModelAdmin):
    list_display = ["key", "label", "order", "active"]
    list_editable = ["order", "active"]


@admin.register(models.ConsentText)
class ConsentTextAdmin(admin.ModelAdmin):
    list_display = ["version", "published_at"]


@admin.register(models.Instructions)
class InstructionsAdmin(admin.ModelAdmin):
    """Publish a new version to change the instructions; the newest is shown."""

    list_display = ["version", "published_at"]


@admin.register(models.AnnotatorProfile)
class AnnotatorProfileAdmin(admin.ModelAdmin):
    list_display = ["user", "quota", "is_synthetic", "created_at"]
    list_filter = ["is_synthetic"]
    search_fields = ["user__username"]


@admin.register(models.Consent)
class ConsentAdmin(admin.ModelAdmin):
    list_display = ["annotator", "text", "given_at", "withdrawn_at"]
    readonly_fields = ["given_at"]


@admin.register(models.Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ["task", "annotator", "reserved_until"]


class RankedItemInline(admin.TabularInline):
    model = models.RankedItem
    extra = 0
    readonly_fields = ["item", "position", "shown_position"]


@admin.register(models.Ranking)
class RankingAdmin(admin.ModelAdmin):
    list_display = ["id", "task", "annotator", "seconds_spent", "created_at"]
    list_filter = ["annotator__is_synthetic"]
    inlines = [RankedItemInline]
