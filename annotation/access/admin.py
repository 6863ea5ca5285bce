"""The admin, scoped to the viewer's studies (``annotation.access``), and the access app's own
admin pages: a study's members (its owners') and its access log (read-only).

- ``StudyScopedAdmin``: a model admin whose rows belong to a study (``study_path``): its
  querysets hold only the viewer's studies, its change forms offer only their rows as
  choices, its permissions are the viewer's role in the row's study (``read`` to see,
  ``roles.RUN_STUDY`` to change; a page with none of their studies is a 403), and no
  changelist filters on a personal field (``PERSONAL_FIELDS``).
- ``StudyScopedInline``: an inline that answers as its parent object's study does.
- ``StudyMembershipAdmin``: a study's members, for its owners, through ``services``.
- ``close_oracles``: every registered admin, ours and the packages' (accounts, schedules,
  tokens), answers an object the viewer may not see with a 404, as one that does not
  exist: no id probing (Django's admin redirects to its index for a missing object and
  answers 403 for one it forbids, which tells them apart).

The superuser (the installation's account) sees and does everything as before.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.contrib.auth import get_user_model
from django.core.exceptions import FieldDoesNotExist
from django.db.models import Model, QuerySet
from django.http import Http404

from annotation.access import log, roles, scope, services
from annotation.access.models import AccessLogEntry, StudyMembership
from annotation.errors import AnnotationError
from core.admin import ReadOnlyAdmin


def _has_study(model: type[Model]) -> bool:
    try:
        model._meta.get_field("study")
    except FieldDoesNotExist:
        return False
    return True


def choices(model: type[Model], user) -> QuerySet | None:
    """The rows of ``model`` a change form may offer ``user`` (None: not restricted here)."""
    from annotation.models import Occupation, Prompt, Study

    if model is Study:
        return scope.visible_studies(user, roles.RUN_STUDY)
    if model is Prompt:
        return scope.visible_prompts(user)
    if model is Occupation:
        return scope.visible_occupations(user)
    if model is get_user_model():  # accounts are the installation's: none offered
        return model.objects.filter(pk__in=[]) if not scope.is_superuser(user) else None
    if _has_study(model):
        return scope.in_scope(model.objects.all(), user, roles.RUN_STUDY)
    return None


class NoOracle:
    """An object the viewer may not see answers 404, as one that does not exist, on each
    of its pages (change, delete, history, password), before any permission is asked
    (Django's admin asks first on some, which answers 403 for a row that is there)."""

    def get_object(self, request, object_id, from_field=None):
        if not (self.has_view_permission(request) or self.has_change_permission(request)):
            return None  # the model is not theirs at all: nothing to tell apart
        return super().get_object(request, object_id, from_field)

    def _get_obj_does_not_exist_redirect(self, request, opts, object_id):
        raise Http404("Not found.")

    def _seen(self, request, object_id) -> None:
        if self.get_object(request, unquote(object_id)) is None:
            raise Http404("Not found.")

    def change_view(self, request, object_id, form_url="", extra_context=None):
        self._seen(request, object_id)
        return super().change_view(request, object_id, form_url, extra_context)

    def delete_view(self, request, object_id, extra_context=None):
        self._seen(request, object_id)
        return super().delete_view(request, object_id, extra_context)

    def history_view(self, request, object_id, extra_context=None):
        self._seen(request, object_id)
        return super().history_view(request, object_id, extra_context)

    def user_change_password(self, request, id, form_url=""):  # auth's UserAdmin only
        self._seen(request, id)
        return super().user_change_password(request, id, form_url)


PERSONAL_FIELDS = frozenset({"demographics"})
"""Fields holding a person's answers: never a changelist lookup (``?demographics__x=``
would list who answered what, one prefix at a time, whatever the change page hides)."""


class StudyScopedAdmin(NoOracle, admin.ModelAdmin):
    """A model admin of rows that belong to a study, through the lookup ``study_path``."""

    study_path = "study"
    read = roles.VIEW_DATA

    def lookup_allowed(self, lookup, value, request=None) -> bool:
        """No query-string lookup through a personal field (a 400, Django's refusal)."""
        if PERSONAL_FIELDS.intersection(lookup.split("__")):
            return False
        return super().lookup_allowed(lookup, value, request)

    def study_of(self, obj):
        """The study ``obj`` belongs to (``study_path`` followed)."""
        for name in self.study_path.split("__"):
            obj = obj if name == "pk" else getattr(obj, name)
        return obj

    def get_queryset(self, request):
        return scope.in_scope(
            super().get_queryset(request), request.user, self.read, self.study_path
        )

    def _may(self, request, capability: str, obj=None) -> bool:
        if obj is None:
            return scope.has_any(request.user, capability)
        return scope.may(request.user, capability, self.study_of(obj))

    def has_module_permission(self, request) -> bool:
        return self._may(request, self.read)

    def has_view_permission(self, request, obj=None) -> bool:
        return self._may(request, self.read, obj)

    def has_add_permission(self, request) -> bool:
        return self._may(request, roles.RUN_STUDY)

    def has_change_permission(self, request, obj=None) -> bool:
        return self._may(request, roles.RUN_STUDY, obj)

    def has_delete_permission(self, request, obj=None) -> bool:
        return self._may(request, roles.RUN_STUDY, obj)

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        offered = choices(db_field.related_model, request.user)
        if offered is not None:
            kwargs["queryset"] = offered
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def formfield_for_manytomany(self, db_field, request, **kwargs):
        offered = choices(db_field.related_model, request.user)
        if offered is not None:
            kwargs["queryset"] = offered
        return super().formfield_for_manytomany(db_field, request, **kwargs)


class OwnersReadOnlyAdmin(ReadOnlyAdmin, StudyScopedAdmin):
    """A study's records that its owners read (``roles.MANAGE_STUDY``) and nobody changes
    here (their writes go through services): the payment ledger, the imports' bases."""

    read = roles.MANAGE_STUDY


class StudyScopedInline:
    """An inline of a ``StudyScopedAdmin``'s object: it may what the parent's study allows."""

    parent_study_path = "study"

    def _allowed(self, request, capability: str, obj) -> bool:
        if obj is None:
            return scope.has_any(request.user, capability)
        study = obj
        for name in self.parent_study_path.split("__"):
            study = study if name == "pk" else getattr(study, name)
        return scope.may(request.user, capability, study)

    def has_view_permission(self, request, obj=None) -> bool:
        return self._allowed(request, roles.VIEW_DATA, obj)

    def has_add_permission(self, request, obj=None) -> bool:
        return self._allowed(request, roles.RUN_STUDY, obj)

    def has_change_permission(self, request, obj=None) -> bool:
        return self._allowed(request, roles.RUN_STUDY, obj)

    def has_delete_permission(self, request, obj=None) -> bool:
        return self._allowed(request, roles.RUN_STUDY, obj)

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        offered = choices(db_field.related_model, request.user)
        if offered is not None:
            kwargs["queryset"] = offered
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


class MembershipForm(forms.ModelForm):
    """A member by username (no list of every account), checked as ``grant`` checks."""

    username = forms.CharField(max_length=150)

    class Meta:
        model = StudyMembership
        fields = ["study", "username", "role", "demographics"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["username"].initial = self.instance.user.get_username()
            for name in ("study", "username"):
                self.fields[name].disabled = True

    def clean(self):
        data = super().clean()
        problem = roles.refusal(data.get("role", ""), bool(data.get("demographics")))
        if problem:
            raise forms.ValidationError(problem[0].upper() + problem[1:] + ".")
        if self.instance.pk:
            if data.get("role") != roles.OWNER and last_owner(self.instance):
                raise forms.ValidationError("The study's last owner: make another one owner first.")
            return data
        try:
            user = services.account(data.get("username", ""))
        except AnnotationError as error:
            raise forms.ValidationError({"username": error.message}) from None
        if not user.is_staff:
            raise forms.ValidationError({"username": "Not a staff account."})
        self.instance.user = user
        return data


def last_owner(membership: StudyMembership) -> bool:
    """Whether ``membership`` is its study's only owner."""
    owners = StudyMembership.objects.filter(study_id=membership.study_id, role=roles.OWNER)
    return membership.role == roles.OWNER and list(owners.values_list("pk", flat=True)) == [
        membership.pk
    ]


@admin.register(StudyMembership)
class StudyMembershipAdmin(StudyScopedAdmin):
    """A study's members, for its owners (``roles.MANAGE_STUDY``): grant (add or change a
    role) and revoke through ``services``, as ``manage.py grant``/``revoke`` do; the
    study's last owner cannot be removed or demoted."""

    read = roles.MANAGE_STUDY
    form = MembershipForm
    list_display = ["study", "user", "role", "demographics", "granted_by", "granted_at"]
    list_filter = [("study", admin.RelatedOnlyFieldListFilter), "role", "demographics"]
    readonly_fields = ["granted_by", "granted_at"]

    def has_add_permission(self, request) -> bool:
        return self._may(request, roles.MANAGE_STUDY)

    def has_change_permission(self, request, obj=None) -> bool:
        return self._may(request, roles.MANAGE_STUDY, obj)

    def has_delete_permission(self, request, obj=None) -> bool:
        if obj is not None and last_owner(obj):
            return False
        return self._may(request, roles.MANAGE_STUDY, obj)

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "study":  # the studies the viewer owns
            kwargs["queryset"] = scope.visible_studies(request.user, roles.MANAGE_STUDY)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def save_model(self, request, obj, form, change) -> None:
        data = form.cleaned_data
        study = obj.study if change else data["study"]
        saved, _ = services.grant(
            study, obj.user.get_username(), data["role"], data["demographics"], by=request.user
        )
        obj.pk = saved.pk

    def delete_model(self, request, obj) -> None:
        services.revoke(obj.study, obj.user.get_username())

    def delete_queryset(self, request, queryset) -> None:
        for membership in queryset.select_related("study", "user"):
            if not last_owner(membership):
                services.revoke(membership.study, membership.user.get_username())


@admin.register(AccessLogEntry)
class AccessLogEntryAdmin(NoOracle, ReadOnlyAdmin):
    """Who read or exported which study's personal data: read only, and an owner sees their
    studies' entries only (``roles.MANAGE_STUDY``)."""

    list_display = ["at", "username", "action", "surface", "study_slug", "what"]
    list_filter = ["action", "surface"]
    search_fields = ["username", "what"]

    def get_queryset(self, request):
        mine = scope.visible_studies(request.user, roles.MANAGE_STUDY)
        return super().get_queryset(request).filter(study_id__in=mine.values("pk"))

    def has_module_permission(self, request) -> bool:
        return scope.has_any(request.user, roles.MANAGE_STUDY)

    def has_view_permission(self, request, obj=None) -> bool:
        if obj is None:
            return scope.has_any(request.user, roles.MANAGE_STUDY)
        return self.get_queryset(request).filter(pk=obj.pk).exists()


def record_read(request, study, what: str) -> None:
    """An admin page showed one person's personal data: into the study's access log."""
    log.record(request.user, study, log.Surface.ADMIN, log.Action.READ, what)


def close_oracles(site: admin.AdminSite) -> None:
    """Every admin registered on ``site`` answers 404 for an object the viewer may not see
    (``NoOracle``), the packages' too: each is given a subclass with the rule first."""
    for model_admin in list(site._registry.values()):
        if isinstance(model_admin, NoOracle):
            continue
        cls = type(model_admin)
        model_admin.__class__ = type(cls.__name__, (NoOracle, cls), {"__module__": cls.__module__})
