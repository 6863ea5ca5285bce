"""The admin's read-only pages of imports, for the study's owners (``roles.MANAGE_STUDY``,
as the access log's): each source with its basis, and the files imported from it. The
writes go through ``manage.py import_annotations`` (``services``)."""

from __future__ import annotations

from django.contrib import admin

from annotation.access.admin import OwnersReadOnlyAdmin as OwnersReadOnly
from annotation.imports.models import ImportBatch, ImportSource


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
