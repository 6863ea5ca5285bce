"""Admin: staff manage the catalogue, tasks, demographic fields, consent texts,
instructions, and studies (opened, closed and archived by actions)."""

from dataclasses import dataclass

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.utils.html import format_html

from annotation import models
from annotation.participants import consent, recruitment
from annotation.studies import lifecycle as studies
from core.admin import ReadOnlyAdmin
from core.errors import StereorankError


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
    list_display = ["id", "study", "prompt", "is_placeholder", "created_at"]
    list_filter = ["study", "is_placeholder", "prompt__prompt_type"]
    raw_id_fields = ["prompt"]


class TaskItemInline(admin.TabularInline):
    model = models.TaskItem
    raw_id_fields = ["item"]
    extra = 0


@admin.register(models.RankingTask)
class RankingTaskAdmin(admin.ModelAdmin):
    """Staff make a task gold (with its reference) or give it an attention check here."""

    list_display = [
        "id",
        "study",
        "occupation",
        "overlap",
        "ranking_count",
        "is_gold",
        "check_item",
    ]
    list_filter = ["study", "is_gold", "occupation"]
    readonly_fields = ["ranking_count"]
    raw_id_fields = ["check_item"]
    inlines = [TaskItemInline]


class GroupQuotaInline(admin.TabularInline):
    """Target annotators per answer; "prefer not to say" and "other" have their own."""

    model = models.GroupQuota
    extra = 0


class LinesField(forms.CharField):
    """A list of strings edited as text, one a line (blank lines dropped)."""

    widget = forms.Textarea(attrs={"rows": 8})

    def prepare_value(self, value):
        if isinstance(value, list):
            return "\n".join(value)
        return value

    def to_python(self, value) -> list[str]:
        text = super().to_python(value) or ""
        return [line.strip() for line in text.splitlines() if line.strip()]


class DemographicFieldForm(forms.ModelForm):
    choices = LinesField(
        required=False,
        help_text="One choice a line; none for a free-text question. "
        "'prefer not to say' is always offered: leave it out.",
    )

    class Meta:
        model = models.DemographicField
        fields = ["key", "label", "help_text", "choices", "allow_other", "order", "active"]


@admin.register(models.DemographicField)
class DemographicFieldAdmin(admin.ModelAdmin):
    form = DemographicFieldForm
    list_display = ["key", "label", "allow_other", "order", "active"]
    list_editable = ["order", "active"]
    inlines = [GroupQuotaInline]


@admin.register(models.ConsentText)
class ConsentTextAdmin(admin.ModelAdmin):
    """A study's consent versions, field by field. A version someone agreed to is read
    only: a change is a new version (add one), which everyone agrees to again."""

    list_display = ["study", "version", "complete", "demonstration", "published_at"]
    list_filter = ["study", "demonstration"]
    fieldsets = [
        (None, {"fields": ["study", "version", "demonstration"]}),
        (
            "Who is responsible, and the participant's rights",
            {
                "fields": [
                    "controller",
                    "contact_email",
                    "dpo_contact",
                    "legal_basis",
                    "retention",
                    "complaint",
                    "ethics_reference",
                ]
            },
        ),
        (None, {"fields": ["text"]}),
    ]

    @admin.display(boolean=True, description="complete")
    def complete(self, text: models.ConsentText) -> bool:
        return not consent.missing_fields(text)

    def get_readonly_fields(self, request, obj=None) -> list:
        if obj is not None and obj.consents.exists():
            return [f.name for f in models.ConsentText._meta.fields]
        return ["demonstration"]


class StatusChangeInline(admin.TabularInline):
    model = models.StatusChange
    fk_name = "annotator"
    extra = 0
    can_delete = False
    readonly_fields = ["previous", "status", "reason", "by", "created_at"]

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(models.Instructions)
class InstructionsAdmin(admin.ModelAdmin):
    """Publish a new version to change a study's instructions; its newest is shown."""

    list_display = ["study", "version", "published_at"]
    list_filter = ["study"]


@admin.register(models.AnnotatorProfile)
class AnnotatorProfileAdmin(admin.ModelAdmin):
    """Status is read-only here: it changes through the policy or the Quality dashboard's
    reinstate form, which record why; ``erased_at`` through erasure."""

    list_display = [
        "user",
        "study",
        "quota",
        "status",
        "is_synthetic",
        "synthetic_kind",
        "created_at",
        "erased_at",
    ]
    list_filter = ["study", "status", "is_synthetic", "synthetic_kind"]
    search_fields = ["user__username"]
    readonly_fields = ["status", "erased_at"]
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


@admin.register(models.Erasure)
class ErasureAdmin(ReadOnlyAdmin):
    """Read-only: when data were erased and how many rankings went, never whose."""

    list_display = ["erased_at", "rankings_removed", "via"]
    list_filter = ["via"]


@admin.register(models.Study)
class StudyAdmin(admin.ModelAdmin):
    """The unit a lab runs: kind, status, sampler, task size and overlap, the entry link to
    paste into the platform, and the exit codes. Saving a study whose sampler is
    ``active`` queues its priorities (``training.registry.sampling``)."""

    list_display = ["name", "kind", "status", "sampler", "platform", "created_at"]
    list_filter = ["kind", "status", "sampler", "platform"]
    prepopulated_fields = {"slug": ["name"]}
    readonly_fields = ["status"]
    actions = ["open_studies", "close_studies", "archive_studies"]

    def _move(self, request, queryset, status: str) -> None:
        """Each selected study along its lifecycle (``studies.transition``); a move it does
        not allow is reported, the others still made."""
        for study in queryset:
            try:
                studies.transition(study, status)
            except StereorankError as error:
                self.message_user(request, error.message, messages.ERROR)
            else:
                self.message_user(request, f"{study.name} is {status}.", messages.SUCCESS)

    @admin.action(description="Open the selected studies")
    def open_studies(self, request, queryset) -> None:
        self._move(request, queryset, models.Study.Status.OPEN)

    @admin.action(description="Close the selected studies (nobody new joins)")
    def close_studies(self, request, queryset) -> None:
        self._move(request, queryset, models.Study.Status.CLOSED)

    @admin.action(description="Archive the selected studies")
    def archive_studies(self, request, queryset) -> None:
        self._move(request, queryset, models.Study.Status.ARCHIVED)

    class Media:
        js = ["annotation/copy_link.js"]

    def _warn_incomplete_consent(self, request) -> None:
        """Open studies keep running on an incomplete consent text; staff are told until
        it is filled (opening a new one is refused: ``consent.require_complete``)."""
        for line in consent.incomplete_open_studies(request.user):
            self.message_user(request, line, messages.WARNING)

    def changelist_view(self, request, extra_context=None):
        if request.method == "GET":
            self._warn_incomplete_consent(request)
        return super().changelist_view(request, extra_context)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        if request.method == "GET":
            self._warn_incomplete_consent(request)
        return super().change_view(request, object_id, form_url, extra_context)

    def get_list_display(self, request) -> list:
        names = list(super().get_list_display(request))
        return [*names[:5], entry_link_column(request), *names[5:]]

    def get_readonly_fields(self, request, obj=None) -> list:
        return [
            *super().get_readonly_fields(request, obj),
            entry_link_column(request),
            "priorities_basis",
            "priorities_updated_at",
        ]


ENTRY_LINK_HELP = {
    models.Study.Platform.PROLIFIC: "Prolific: the study URL, with URL parameters on.",
    models.Study.Platform.MTURK: "MTurk: the external question's URL; MTurk adds its ids.",
    models.Study.Platform.GENERIC: "Put each participant's id in place of {pid}.",
}


@dataclass(frozen=True)
class EntryLinkColumn:
    """The study's full entry link in a read-only box with a copy button, as an admin
    column or read-only field; equal for equal site URLs (the admin compares fields)."""

    site_url: str
    __name__ = "entry_link"
    short_description = "entry link (paste into the platform)"

    def __call__(self, study: models.Study) -> str:
        if not study.pk or not study.slug:
            return "-"
        box = f"entry-link-{study.pk}"
        return format_html(
            '<input type="text" readonly id="{}" value="{}" size="60" aria-label="{}">'
            ' <button type="button" class="button" data-copy="{}">Copy</button>'
            '<div class="help">{}</div>',
            box,
            recruitment.entry_link(study, self.site_url),
            f"Entry link of {study.name}",
            box,
            ENTRY_LINK_HELP[study.platform],
        )


def entry_link_column(request) -> EntryLinkColumn:
    """The column on ``STEREORANK["SITE_URL"]``, else on the host this request came to."""
    return EntryLinkColumn(settings.STEREORANK["SITE_URL"] or request.build_absolute_uri("/"))


@admin.register(models.Participation)
class ParticipationAdmin(admin.ModelAdmin):
    """Read-only: who came by which study's link and how it ended (ids as stored: hashed).
    ``duplicate``: a later participation with a crowd id that came first on another
    device or browser (``annotation.participants.admission``); check it before paying."""

    list_display = [
        "annotator",
        "study",
        "started_at",
        "outcome",
        "screen_out_reason",
        "duplicate",
        "session_id",
    ]
    list_filter = ["study", "duplicate", "outcome", "screen_out_reason"]
    exclude = ["external_id_hash", "secret_hash"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
