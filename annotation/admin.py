"""Admin: staff manage the catalogue, tasks, demographic fields, consent texts."""

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
    """Staff make a task gold (with its reference) or give it an attention check here."""

    list_display = ["id", "occupation", "overlap", "ranking_count", "is_gold", "check_item"]
    list_filter = ["is_gold", "occupation"]
    readonly_fields = ["ranking_count"]
    raw_id_fields = ["check_item"]
    inlines = [TaskItemInline]


@admin.register(models.DemographicField)
class DemographicFieldAdmin(admin.ModelAdmin):
    list_display = ["key", "label", "order", "active"]
    list_editable = ["order", "active"]


@admin.register(models.ConsentText)
class ConsentTextAdmin(admin.ModelAdmin):
    list_display = ["version", "published_at"]


class StatusChangeInline(admin.TabularInline):
    model = models.StatusChange
    fk_name = "annotator"
    extra = 0
    can_delete = False
    readonly_fields = ["previous", "status", "reason", "by", "created_at"]

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(models.AnnotatorProfile)
class AnnotatorProfileAdmin(admin.ModelAdmin):
    """Status is read-only here: it changes through the policy or the Quality dashboard's
    reinstate form, which record why."""

    list_display = ["user", "quota", "status", "is_synthetic", "synthetic_kind", "created_at"]
    list_filter = ["status", "is_synthetic", "synthetic_kind"]
    search_fields = ["user__username"]
    readonly_fields = ["status"]
    inlines = [StatusChangeInline]


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
