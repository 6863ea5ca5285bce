"""Memberships (a staff account's role in a study) and the append-only access log; on
PostgreSQL a trigger refuses any UPDATE or DELETE of the log in the database itself."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


APPEND_ONLY = """
CREATE FUNCTION access_log_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'the access log is append-only';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER access_log_append_only BEFORE UPDATE OR DELETE ON access_accesslogentry
    FOR EACH ROW EXECUTE FUNCTION access_log_append_only();
"""
DROP_APPEND_ONLY = """
DROP TRIGGER IF EXISTS access_log_append_only ON access_accesslogentry;
DROP FUNCTION IF EXISTS access_log_append_only();
"""


def append_only(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(APPEND_ONLY)


def writable(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP_APPEND_ONLY)


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("annotation", "0019_day_two_consent_quality_viewport"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="AccessLogEntry",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("at", models.DateTimeField(default=django.utils.timezone.now, editable=False)),
                ("username", models.CharField(max_length=150)),
                ("study_slug", models.CharField(max_length=60)),
                (
                    "surface",
                    models.CharField(
                        choices=[
                            ("api", "REST API"),
                            ("dashboard", "Dashboards"),
                            ("admin", "Admin"),
                            ("command", "Command line"),
                        ],
                        max_length=20,
                    ),
                ),
                (
                    "action",
                    models.CharField(
                        choices=[("read", "Read"), ("export", "Export")], max_length=20
                    ),
                ),
                ("what", models.CharField(max_length=300)),
                (
                    "study",
                    models.ForeignKey(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to="annotation.study",
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        blank=True,
                        db_constraint=False,
                        null=True,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "verbose_name_plural": "access log entries",
                "ordering": ["-at", "-id"],
                "indexes": [models.Index(fields=["study", "at"], name="access_log_study_at")],
            },
        ),
        migrations.CreateModel(
            name="StudyMembership",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "role",
                    models.CharField(
                        choices=[
                            ("owner", "Owner (everything, members and deletion included)"),
                            (
                                "researcher",
                                "Researcher (runs the study, sees rankings and reports)",
                            ),
                            ("viewer", "Viewer (aggregate reports only)"),
                        ],
                        max_length=20,
                    ),
                ),
                (
                    "demographics",
                    models.BooleanField(
                        default=False,
                        help_text="May read any one person's demographic answers (exports with demographics, an annotator's admin page). Researchers and owners only.",
                    ),
                ),
                ("granted_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "granted_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "study",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="memberships",
                        to="annotation.study",
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="study_memberships",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["study_id", "role", "user_id"],
                "constraints": [
                    models.UniqueConstraint(fields=("user", "study"), name="one_role_per_study"),
                    models.CheckConstraint(
                        condition=models.Q(("role__in", ("owner", "researcher", "viewer"))),
                        name="membership_role_known",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            ("demographics", False),
                            ("role__in", ["owner", "researcher"]),
                            _connector="OR",
                        ),
                        name="membership_demographics_needs_rows",
                    ),
                ],
            },
        ),
        migrations.RunPython(append_only, writable),
    ]
