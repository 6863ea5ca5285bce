"""What an erasure removes outside the annotation data: the account's traces.

``forget_account`` runs in the erasure's first transaction, before the account is
renamed (it needs the username), and deletes:

- every row that points at the account and would go with it were it deleted
  (``on_delete=CASCADE``: API tokens of every kind, second factors, study roles, the
  admin history the account wrote), the annotator profile aside (it keeps the consent
  history), and the account's groups and permissions;
- its sessions (the database's: each holds the account's id), and every expired one;
- the log-in attempts django-axes keeps under its username (attempts, failure and
  access logs), when axes is installed;
- the admin's history entries about the account or its profile (an entry quotes the
  object's name, here the username);
- the account's last log-in time.

``forget_expired`` runs once a day for everyone (beat): expired sessions and log-in
attempts whose cool-off has passed go, so neither outlives its use by more than a day.

``forget_cached`` runs once the erasure has committed: every cached page part of
``core.personal_cache``'s namespace (charts, validation reports) and the account's
throttle counters. A cache that cannot be reached then is logged, not raised: the data
are already gone, and those entries expire on their own (``CACHE_SECONDS`` of the
dashboards' charts and reports).
"""

from __future__ import annotations

from importlib import import_module

from django.apps import apps
from django.conf import settings
from django.contrib.auth import SESSION_KEY
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.cache import cache
from django.db import models
from django.db.models import Q
from django.utils import timezone
from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle

from annotation.models import AnnotatorProfile
from core import personal_cache

AXES_MODELS = ("AccessAttempt", "AccessFailureLog", "AccessLog")


def forget_account(user: AbstractBaseUser, profile: AnnotatorProfile) -> None:
    """Delete the account's traces listed in the module docstring (call before renaming)."""
    username = user.get_username()
    _delete_dependents(user)
    _delete_sessions(user.pk)
    _delete_login_attempts(username)
    _delete_admin_history(user, profile, username)
    user.last_login = None


def _delete_dependents(user: AbstractBaseUser) -> None:
    """Rows that would be deleted with the account (the profile aside); its groups and
    permissions."""
    for rel in type(user)._meta.related_objects:
        if rel.many_to_many or rel.related_model is AnnotatorProfile:
            continue
        if rel.on_delete is models.CASCADE:
            rel.related_model._base_manager.filter(**{rel.field.name: user.pk}).delete()
    for field in type(user)._meta.many_to_many:
        getattr(user, field.name).clear()


def _session_store():
    """The session engine's store when it keeps sessions in the database, else None (a
    cookie-only or cache-only engine keeps none here)."""
    store = import_module(settings.SESSION_ENGINE).SessionStore
    return store if hasattr(store, "get_model_class") else None


def _delete_sessions(user_id: int) -> int:
    """Delete the account's sessions (every expired session first: one DELETE, and the
    account's own are among them); how many of the account's live ones went."""
    store = _session_store()
    if store is None:
        return 0
    store.clear_expired()
    removed = 0
    for session in store.get_model_class().objects.iterator():
        if str(session.get_decoded().get(SESSION_KEY)) == str(user_id):
            store(session.session_key).delete()
            removed += 1
    return removed


def _delete_login_attempts(username: str) -> None:
    """django-axes' records of log-ins under the username (it keys them by username)."""
    if not apps.is_installed("axes"):
        return
    for name in AXES_MODELS:
        apps.get_model("axes", name).objects.filter(username=username).delete()


def _delete_admin_history(user: AbstractBaseUser, profile: AnnotatorProfile, username: str):
    """The admin's history entries about the account or its profile, or named as it."""
    if not apps.is_installed("django.contrib.admin"):
        return
    from django.contrib.admin.models import LogEntry
    from django.contrib.contenttypes.models import ContentType

    about = Q(object_repr=username)
    for obj in (user, profile):
        about |= Q(content_type=ContentType.objects.get_for_model(obj), object_id=str(obj.pk))
    LogEntry.objects.filter(about).delete()


def forget_expired() -> dict[str, int]:
    """What expires, deleted once a day by beat (``annotation.tasks.forget_expired``):
    expired sessions, and django-axes' log-in attempts whose cool-off has passed (they no
    longer count; axes itself deletes them only at the next log-in attempt)."""
    out = {"sessions": 0, "login_attempts": 0}
    store = _session_store()
    if store is not None:
        model = store.get_model_class()
        out["sessions"] = model.objects.filter(expire_date__lt=timezone.now()).count()
        store.clear_expired()
    if apps.is_installed("axes"):
        from axes.helpers import get_cool_off

        cool_off = get_cool_off()
        if cool_off:
            attempts = apps.get_model("axes", "AccessAttempt").objects
            before = timezone.now() - cool_off
            out["login_attempts"] = attempts.filter(attempt_time__lte=before).delete()[0]
    return out


def forget_cached(user_id: int) -> None:
    """Cached page parts that may name the person, and the account's throttle counters."""
    personal_cache.sweep()
    scopes = list(api_settings.DEFAULT_THROTTLE_RATES or {}) + ["user"]
    cache.delete_many(
        [SimpleRateThrottle.cache_format % {"scope": s, "ident": user_id} for s in scopes]
    )
