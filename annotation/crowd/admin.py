"""The ledger in the admin: every decision and payment of a study, and its bulk payments,
read only, to the study's owners (``roles.MANAGE_STUDY``) and no one else; a row of
another study is a 404, as everywhere in the admin (``annotation.access.admin``)."""

from django.contrib import admin

from annotation.access.admin import OwnersReadOnlyAdmin as OwnersReadOnly
from annotation.crowd.models import BulkPayment, LedgerEntry, PlatformStudy


@admin.register(LedgerEntry)
class LedgerEntryAdmin(OwnersReadOnly):
    list_display = ["created_at", "study", "kind", "submission_id", "amount_cents", "payment"]
    list_filter = ["kind"]
    search_fields = ["submission_id"]
    fields = [
        "study", "kind", "submission_id", "reason", "amount_cents", "payment", "by", "created_at",
    ]  # fmt: skip
    readonly_fields = fields


@admin.register(BulkPayment)
class BulkPaymentAdmin(OwnersReadOnly):
    list_display = ["created_at", "study", "external_id", "state", "total_cents", "currency"]
    list_filter = ["state"]
    readonly_fields = [
        "study", "external_id", "state", "currency", "total_cents", "charged_cents", "note",
        "by", "created_at", "sent_at", "checked_at",
    ]  # fmt: skip
    fields = readonly_fields


@admin.register(PlatformStudy)
class PlatformStudyAdmin(OwnersReadOnly):
    list_display = ["study", "platform", "external_id", "status", "places", "reward_cents"]
    readonly_fields = [
        "study", "platform", "external_id", "status", "currency", "reward_cents", "places",
        "minutes", "screening", "removed_groups", "created_at", "published_at", "paused_at",
    ]  # fmt: skip
    fields = readonly_fields
