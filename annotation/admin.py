"""Admin: staff manage the catalogue, tasks, demographic fields, consent texts,
instructions, and studies (opened, closed and archived by actions).

Each page of a study's rows is scoped to the viewer's studies (``StudyScopedAdmin``):
another study's rows are neither listed, nor offered in a form, nor found (404). The
catalogue, the demographic fields and the erasure records are the installation's (the
superuser's). A study's members are edited by its owners (``annotation.access.admin``);
an annotator's demographic answers are shown to a member with the demographics
permission only, and that read is in the study's access log; no changelist filters on
them, and a person's rows (profile, rankings) are never deleted here, only erased.

Past 400 lines because the admin is one surface: each model's page is a few lines, and
its scoping is read against its neighbours'."""

from dataclasses import dataclass

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.utils.html import format_html

from annotation import models
from annotation.access import roles, scope, services
from annotation.access.admin import StudyScopedAdmin, StudyScopedInline, record_read
from annotation.participants import consent, content, recruitment
from annotation.participants.erasure import erase_annotator
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


STUDY_FILTER = ("study", admin.RelatedOnlyFieldListFilter)  # the viewer's studies only


@admin.register(models.Item)
class ItemAdmin(StudyScopedAdmin):
    list_display = ["id", "study", "prompt", "is_placeholder", "created_at"]
    list_filter = [STUDY_FILTER, "is_placeholder", "prompt__prompt_type"]
    raw_id_fields = ["prompt"]


class TaskItemInline(StudyScopedInline, admin.TabularInline):
    model = models.TaskItem
    raw_id_fields = ["item"]
    extra = 0


@admin.register(models.RankingTask)
class RankingTaskAdmin(StudyScopedAdmin):
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
    list_filter = [STUDY_FILTER, "is_gold", ("occupation", admin.RelatedOnlyFieldListFilter)]
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
        fields = [
            "key",
            "label",
            "help_text",
            "choices",
            "allow_other",
            "order",
            "active",
            "translations",
        ]


@admin.register(models.DemographicField)
class DemographicFieldAdmin(admin.ModelAdmin):
    form = DemographicFieldForm
    list_display = ["key", "label", "allow_other", "order", "active"]
    list_editable = ["order", "active"]
    inlines = [GroupQuotaInline]


@admin.register(models.ConsentText)
class ConsentTextAdmin(StudyScopedAdmin):
    """A study's consent versions, field by field. A version someone agreed to is read
    only: a change is a new version (add one), which everyone agrees to again."""

    list_display = ["study", "language", "version", "complete", "demonstration", "published_at"]
    list_filter = [STUDY_FILTER, "language", "demonstration"]
    fieldsets = [
        (None, {"fields": ["study", "language", "version", "demonstration"]}),
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
        (
            "What a public dataset release may hold (nothing unless allowed here)",
            {"fields": ["release_rankings", "release_demographics", "release_free_text"]},
        ),
    ]

    @admin.display(boolean=True, description="complete")
    def complete(self, text: models.ConsentText) -> bool:
        return not consent.missing_fields(text)

    def get_readonly_fields(self, request, obj=None) -> list:
        if obj is not None and obj.consents.exists():
            return [f.name for f in models.ConsentText._meta.fields]
        return ["demonstration"]


class StatusChangeInline(StudyScopedInline, admin.TabularInline):
    model = models.StatusChange
    fk_name = "annotator"
    extra = 0
    can_delete = False
    readonly_fields = ["previous", "status", "reason", "by", "created_at"]

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(models.Instructions)
class InstructionsAdmin(StudyScopedAdmin):
    """Publish a new version to change a study's instructions in a language (or
    ``manage.py instructions``); the newest in the participant's language is shown."""

    list_display = ["study", "language", "version", "published_at"]
    list_filter = [STUDY_FILTER, "language"]


@admin.register(models.AnnotatorProfile)
class AnnotatorProfileAdmin(StudyScopedAdmin):
    """Status is read-only here: it changes through the policy or the Quality dashboard's
    reinstate form, which record why; ``erased_at`` through erasure. The account is not
    changed here. The demographic answers are shown to a member with the demographics
    permission only, each such page in the study's access log."""

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
    list_filter = [STUDY_FILTER, "status", "is_synthetic", "synthetic_kind"]
    search_fields = ["user__username"]
    readonly_fields = ["user", "status", "erased_at"]
    inlines = [StatusChangeInline]

    actions = ["erase_selected"]

    def has_add_permission(self, request) -> bool:
        return scope.is_superuser(request.user)  # accounts: create_annotator, the portal

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # a person's data leave through erasure, which leaves no trace

    @admin.action(description="Erase the selected annotators (their rankings and answers)")
    def erase_selected(self, request, queryset):
        """Erasure on a request received by other means (an e-mail): as ``manage.py erase``,
        for annotators of studies the viewer runs."""
        erased = 0
        for profile in queryset.filter(erased_at__isnull=True):
            if scope.may(request.user, roles.RUN_STUDY, profile.study):
                erase_annotator(profile, via=models.Erasure.Via.STAFF)
                erased += 1
        self.message_user(request, f"{erased} annotator(s) erased.")

    def _answers_shown(self, request, obj) -> bool:
        return obj is not None and scope.may(request.user, roles.VIEW_DEMOGRAPHICS, obj.study)

    def get_exclude(self, request, obj=None):
        hidden = [] if self._answers_shown(request, obj) else ["demographics"]
        return [*(super().get_exclude(request, obj) or []), *hidden]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        response = super().change_view(request, object_id, form_url, extra_context)
        obj = getattr(response, "context_data", {}).get("original")
        shown = request.method == "GET" and response.status_code == 200 and obj is not None
        if shown and self._answers_shown(request, obj):
            record_read(request, obj.study, f"annotator {obj.pk}'s demographics (admin)")
        return response


@admin.register(models.Consent)
class ConsentAdmin(StudyScopedAdmin):
    study_path = "annotator__study"
    list_display = ["annotator", "text", "given_at", "withdrawn_at"]
    readonly_fields = ["given_at"]


@admin.register(models.Assignment)
class AssignmentAdmin(StudyScopedAdmin):
    study_path = "task__study"
    list_display = ["task", "annotator", "reserved_until"]


class RankedItemInline(StudyScopedInline, admin.TabularInline):
    parent_study_path = "task__study"
    model = models.RankedItem
    extra = 0
    can_delete = False  # a ranking's items are the ranking
    readonly_fields = ["item", "position", "shown_position"]


@admin.register(models.Ranking)
class RankingAdmin(StudyScopedAdmin):
    """Rankings are never deleted here: a task's count would go wrong and the annotator's
    data would leave without an erasure (the annotators' page erases)."""

    study_path = "task__study"
    list_display = ["id", "task", "annotator", "seconds_spent", "created_at"]
    list_filter = ["annotator__is_synthetic"]
    inlines = [RankedItemInline]

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(models.Erasure)
class ErasureAdmin(ReadOnlyAdmin):
    """Read-only: when data were erased and how many rankings went, never whose."""

    list_display = ["erased_at", "rankings_removed", "via"]
    list_filter = ["via"]


@admin.register(models.Study)
class StudyAdmin(StudyScopedAdmin):
    """The unit a lab runs: kind, status, sampler, task size and overlap, the entry link to
    paste into the platform, and the exit codes. Saving a study whose sampler is
    ``active`` queues its priorities (``training.registry.sampling``). Whoever adds a
    study owns it; only an owner deletes one (its members: Access > Study memberships)."""

    study_path = "pk"
    read = roles.ANY_ROLE

    def has_add_permission(self, request) -> bool:
        return scope.is_staff(request.user)  # any staff member may start a study of theirs

    def has_delete_permission(self, request, obj=None) -> bool:
        return self._may(request, roles.MANAGE_STUDY, obj)

    def save_model(self, request, obj, form, change) -> None:
        super().save_model(request, obj, form, change)
        if not change and not scope.is_superuser(request.user):  # its maker owns it
            services.grant(obj, request.user.get_username(), roles.OWNER, by=request.user)

    list_display = [
        "name",
        "kind",
        "status",
        "question_format",
        "sampler",
        "platform",
        "created_at",
    ]
    list_filter = ["kind", "status", "question_format", "sampler", "platform"]
    prepopulated_fields = {"slug": ["name"]}
    readonly_fields = ["status"]
    actions = ["open_studies", "close_studies", "archive_studies"]

    def _move(self, request, queryset, status: str) -> None:
        """Each selected study along its lifecycle (``studies.transition``); a move it does
        not allow is reported, the others still made."""
        for study in queryset.filter(pk__in=scope.visible_studies(request.user, roles.RUN_STUDY)):
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
        """Open studies keep running while a language lacks its content; staff are told
        until it is filled (opening a new one is refused: ``content.require_ready``)."""
        for line in content.unready_open_studies(request.user):
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
class ParticipationAdmin(StudyScopedAdmin):
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
    list_filter = [STUDY_FILTER, "duplicate", "outcome", "screen_out_reason"]
    exclude = ["external_id_hash", "secret_hash"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
