"""Who is a member of which study with what role (``StudyMembership``), and the access log
(``AccessLogEntry``): who read or exported which study's personal data, when, through
which surface. The log is append-only: no update or delete through the ORM, and on
PostgreSQL a trigger refuses them in the database too (migration 0001)."""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from annotation.access import roles


class StudyMembership(models.Model):
    """A staff account's role in one study (``roles``); ``demographics``: it may also read
    any one person's demographic answers (on a role that reads rows)."""

    class Role(models.TextChoices):
        OWNER = roles.OWNER, "Owner (everything, members and deletion included)"
        RESEARCHER = roles.RESEARCHER, "Researcher (runs the study, sees rankings and reports)"
        VIEWER = roles.VIEWER, "Viewer (aggregate reports only)"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="study_memberships"
    )
    study = models.ForeignKey(
        "annotation.Study", on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=20, choices=Role.choices)
    demographics = models.BooleanField(
        default=False,
        help_text="May read any one person's demographic answers (exports with "
        "demographics, an annotator's admin page). Researchers and owners only.",
    )
    granted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    granted_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["study_id", "role", "user_id"]
        constraints = [
            models.UniqueConstraint(fields=["user", "study"], name="one_role_per_study"),
            models.CheckConstraint(condition=Q(role__in=roles.ROLES), name="membership_role_known"),
            models.CheckConstraint(
                condition=Q(demographics=False)
                | Q(role__in=roles.roles_with(roles.VIEW_DEMOGRAPHICS)),
                name="membership_demographics_needs_rows",
            ),
        ]

    def __str__(self) -> str:
        flag = " + demographics" if self.demographics else ""
        return f"{self.user} is {self.role}{flag} of {self.study}"


class AppendOnly(Exception):
    """The access log is never changed nor deleted (GDPR Art. 30 records)."""


class AppendOnlyQuerySet(models.QuerySet):
    def update(self, **kwargs):
        raise AppendOnly("the access log is append-only: no update")

    def delete(self):
        raise AppendOnly("the access log is append-only: no delete")


class AccessLogEntry(models.Model):
    """One read or export of a study's personal data: who, when, which study, through
    which surface, and what (the path or the export's kind).

    The user and the study are kept as ids without a database constraint, beside their
    names as they were: an entry outlives the account and the study it names."""

    class Surface(models.TextChoices):
        API = "api", "REST API"
        DASHBOARD = "dashboard", "Dashboards"
        ADMIN = "admin", "Admin"
        COMMAND = "command", "Command line"

    class Action(models.TextChoices):
        READ = "read", "Read"
        EXPORT = "export", "Export"

    at = models.DateTimeField(default=timezone.now, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    username = models.CharField(max_length=150)
    study = models.ForeignKey(
        "annotation.Study", on_delete=models.DO_NOTHING, db_constraint=False, related_name="+"
    )
    study_slug = models.CharField(max_length=60)
    surface = models.CharField(max_length=20, choices=Surface.choices)
    action = models.CharField(max_length=20, choices=Action.choices)
    what = models.CharField(max_length=300)

    objects = AppendOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["study", "at"], name="access_log_study_at")]
        verbose_name_plural = "access log entries"

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.username} {self.action} {self.study_slug}"

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise AppendOnly("the access log is append-only: an entry is never changed")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AppendOnly("the access log is append-only: an entry is never deleted")
