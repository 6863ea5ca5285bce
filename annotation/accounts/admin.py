"""The admin's API tokens: listed and revoked (deleted), never issued nor changed here.

A token is issued only by ``POST /api/auth/token/``, where its owner gives the password
(and staff their second factor), so the admin cannot mint one for someone else; knox's
own admin, which can, is replaced.
"""

from django.contrib import admin
from knox.models import AuthToken

from core.admin import ReadOnlyAdmin

admin.site.unregister(AuthToken)


@admin.register(AuthToken)
class ApiTokenAdmin(ReadOnlyAdmin):
    list_display = ("user", "token_key", "created", "expiry")
    list_select_related = ("user",)
    search_fields = ("user__username", "token_key")
    fields = ("user", "token_key", "created", "expiry")
    ordering = ("-created",)

    def has_delete_permission(self, request, obj=None) -> bool:
        return admin.ModelAdmin.has_delete_permission(self, request, obj)
