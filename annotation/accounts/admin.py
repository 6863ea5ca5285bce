"""The admin's API tokens and second factors: listed and revoked (deleted), never issued,
changed or shown there.

A token is issued only by ``POST /api/auth/token/``, where its owner gives the password
(and staff their second factor); an authenticator app is enrolled only by its owner on
the portal, and its key and the recovery codes are never shown again. knox's and
django-otp's own admins (which can mint a token, add a device with a chosen key, show a
key's QR code or the recovery codes) are replaced. Deleting a person's app here does what
``manage.py reset_second_factor`` does.
"""

from django.contrib import admin
from django_otp.plugins.otp_static import admin as _static_admin  # noqa: F401 (registered first)
from django_otp.plugins.otp_static.models import StaticDevice
from django_otp.plugins.otp_totp import admin as _totp_admin  # noqa: F401 (registered first)
from django_otp.plugins.otp_totp.models import TOTPDevice
from knox.models import AuthToken

from core.admin import ReadOnlyAdmin

for model in (AuthToken, TOTPDevice, StaticDevice):
    admin.site.unregister(model)


class RevocableAdmin(ReadOnlyAdmin):
    """Shown and deleted, nothing else."""

    list_select_related = ("user",)
    search_fields = ("user__username",)

    def has_delete_permission(self, request, obj=None) -> bool:
        return admin.ModelAdmin.has_delete_permission(self, request, obj)


@admin.register(AuthToken)
class ApiTokenAdmin(RevocableAdmin):
    list_display = fields = ("user", "token_key", "created", "expiry")
    search_fields = ("user__username", "token_key")
    ordering = ("-created",)


@admin.register(TOTPDevice)
class AuthenticatorAppAdmin(RevocableAdmin):
    list_display = fields = ("user", "name", "confirmed", "created_at", "last_used_at")


@admin.register(StaticDevice)
class RecoveryCodesAdmin(RevocableAdmin):
    list_display = fields = ("user", "name", "created_at", "last_used_at")
