"""What the apps' admin modules share."""

from django.contrib import admin


class ReadOnlyAdmin(admin.ModelAdmin):
    """Records shown, never added, changed or deleted through a form: their writes go
    through services, so no invariant can be bypassed here."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
