"""The admin's read-only pages of imports, for the study's owners (``roles.MANAGE_STUDY``,
as the access log's): each source with its basis, and the files imported from it. The
writes go through ``manage.py import_annotations`` (``services``)."""

from __future__ import annotations

from django.contrib import admin

from annotation.access import roles, scope
from annotation.access.admin import NoOracle
from annotation.imports.models import ImportBatch, ImportSource
from core.admin import ReadOnlyAdmin


class OwnersReadOnly(NoOracle, ReadOnlyAdmin):
    """Rows of the studies the viewer owns, read only."""

    def get_queryset(self, request):
        mine = scope.visible_studies(request.user, roles.MANAGE_STUDY)
        return super().get_queryset(request).filter(study_id__in=mine.values("pk"))

    def has_module_permission(self, request) -> bool:
        return scope.has_any(request.user, roles.MANAGE_STUDY)

    def has_view_permission(self, request, obj=None) -> bool:
        if obj is None:
            return scope.has_any(request.user, roles.MANAGE_STUDY)
        return self.get_queryset(request).filter(pk=obj.pk).exists()


class BatchInline(admin.TabularInline):
    model = ImportBatch
    fields = [
        "file_name",
        "file_sha256",
        "rankings",
        "annotators",
        "tasks",
        "skipped",
        "imported_by",
        "imported_at",
    ]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(ImportSource)
class ImportSourceAdmin(OwnersReadOnly):
    list_display = ["name", "tool", "study", "basis_recorded_at", "basis_by", "basis_withdrawn_at"]
    list_filter = ["tool"]
    inlines = [BatchInline]


@admin.register(ImportBatch)
class ImportBatchAdmin(OwnersReadOnly):
    list_display = ["file_name", "source", "study", "rankings", "annotators", "imported_at"]
