"""API tokens move to hashed storage (django-rest-knox): each participant's old token
(DRF's ``authtoken_token``, kept in plain text) becomes a knox token with the same plain
text, stored as its digest, expiring like a new one; staff tokens are revoked (a staff
token is issued only after the second factor: staff log in again). The old rows are
deleted; the old table stays (empty). Nothing to undo: a digest cannot be turned back."""

from django.conf import settings
from django.db import migrations
from django.utils import timezone

LEGACY = "authtoken_token"


def hash_legacy_tokens(apps, schema_editor):
    from knox.crypto import hash_token
    from knox.settings import CONSTANTS, knox_settings

    connection = schema_editor.connection
    if LEGACY not in connection.introspection.table_names():
        return  # a database made after the move
    quote = schema_editor.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {quote('key')}, {quote('user_id')} FROM {quote(LEGACY)}")
        rows = cursor.fetchall()
    if not rows:
        return
    user_model = apps.get_model(settings.AUTH_USER_MODEL)
    token_model = apps.get_model("knox", "AuthToken")
    # Staff as annotation.accounts.policy defined them when this ran (is_staff or
    # is_superuser): a migration keeps doing what it did, whatever the policy becomes.
    staff = set(
        user_model.objects.filter(pk__in=[user_id for _, user_id in rows])
        .exclude(is_staff=False, is_superuser=False)
        .values_list("pk", flat=True)
    )
    ttl = knox_settings.TOKEN_TTL
    expiry = timezone.now() + ttl if ttl is not None else None
    token_model.objects.bulk_create(
        token_model(
            digest=hash_token(key),
            token_key=key[: CONSTANTS.TOKEN_KEY_LENGTH],
            user_id=user_id,
            expiry=expiry,
        )
        for key, user_id in rows
        if user_id not in staff
    )
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {quote(LEGACY)}")
    revoked = sum(user_id in staff for _, user_id in rows)
    print(
        f"\n  API tokens: {len(rows) - revoked} participants' tokens now stored hashed "
        f"(they expire like new ones); {revoked} staff tokens revoked (staff log in again, "
        "with their second factor)."
    )


class Migration(migrations.Migration):
    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("knox", "0009_extend_authtoken_field"),
    ]

    operations = [migrations.RunPython(hash_legacy_tokens, migrations.RunPython.noop)]
