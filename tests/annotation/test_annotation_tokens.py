"""API tokens, tried as an attacker would: what the database holds authenticates nobody;
an expired, revoked or erased token is refused with a message that says what to do; a
token per device, revoked one at a time or all at once; the lookup is one query; old
plain-text tokens move to hashed storage (participants') or are revoked (staff's)."""

import importlib
from datetime import timedelta

import pytest
from django.apps import apps as django_apps
from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone
from knox.models import AuthToken
from rest_framework.test import APIClient

from annotation.accounts import tokens
from annotation.api.auth import ProfileTokenAuthentication
from annotation.participants import services

PASSWORD = "the-Right-pass-1"
legacy = importlib.import_module("annotation.accounts.migrations.0001_hashed_api_tokens")


@pytest.fixture
def user(db):
    return get_user_model().objects.create_user("ann", password=PASSWORD)


def _log_in(username="ann", password=PASSWORD):
    return APIClient().post(
        "/api/auth/token/", {"username": username, "password": password}, format="json"
    )


def _me(token: str):
    return APIClient(HTTP_AUTHORIZATION=f"Token {token}").get("/api/me/")


def _refused(response) -> None:
    assert response.status_code in (401, 403)
    assert "log in again (POST /api/auth/token/)" in response.json()["detail"]


def test_the_log_in_answers_a_new_token_once_with_its_expiry(user):
    body = _log_in().json()
    assert len(body["token"]) == 64 and _me(body["token"]).status_code == 200
    expiry = timezone.datetime.fromisoformat(body["expiry"].replace("Z", "+00:00"))
    assert abs(expiry - (timezone.now() + timedelta(hours=10))) < timedelta(minutes=1)


def test_a_token_read_from_the_database_does_not_authenticate(user):
    plain = _log_in().json()["token"]
    (row,) = AuthToken.objects.filter(user=user).values()
    assert plain not in [str(value) for value in row.values()]  # not kept in plain text
    for stolen in (row["digest"], row["token_key"], row["digest"][:64]):
        _refused(_me(stolen))
    assert _me(plain).status_code == 200


def test_each_device_has_its_own_token_revoked_alone_or_all_at_once(user):
    laptop, phone, tablet = (_log_in().json()["token"] for _ in range(3))
    assert len({laptop, phone, tablet}) == 3
    out = APIClient(HTTP_AUTHORIZATION=f"Token {laptop}").post("/api/auth/logout/")
    assert out.status_code == 204
    _refused(_me(laptop))
    assert _me(phone).status_code == 200 and _me(tablet).status_code == 200
    out = APIClient(HTTP_AUTHORIZATION=f"Token {phone}").post("/api/auth/logout/all/")
    assert out.status_code == 204
    _refused(_me(phone))
    _refused(_me(tablet))
    assert not AuthToken.objects.exists()


def test_a_password_change_ends_every_token_of_the_account(user, django_user_model):
    """A stolen token outlives no password change (sessions end then too); saving the
    account otherwise keeps them."""
    other = django_user_model.objects.create_user("other", password=PASSWORD)
    theirs = _log_in("other").json()["token"]
    first, second = _log_in().json()["token"], _log_in().json()["token"]
    user.first_name = "Renamed"
    user.save()
    assert _me(first).status_code == 200
    user.set_password("a-new-pw-98765")
    user.save()
    _refused(_me(first))
    _refused(_me(second))
    assert _me(theirs).status_code == 200 and other.is_active


def test_an_expired_token_is_refused_and_cleared_at_the_next_log_in(user):
    plain = _log_in().json()["token"]
    AuthToken.objects.update(expiry=timezone.now() - timedelta(seconds=1))
    _refused(_me(plain))
    _log_in()
    assert AuthToken.objects.count() == 1  # the expired one is gone


def test_an_inactive_users_token_is_refused(user):
    plain = _log_in().json()["token"]
    user.is_active = False
    user.save()
    response = _me(plain)
    assert response.status_code in (401, 403)


def test_a_wrong_or_empty_token_header_is_refused(user):
    for header in ("Token", "Token a b", "Token " + "0" * 64):
        response = APIClient(HTTP_AUTHORIZATION=header).get("/api/me/")
        assert response.status_code in (401, 403), header


def test_the_token_lookup_is_one_query(user, django_assert_num_queries):
    services.get_profile(user)
    _, plain = tokens.issue(user)
    with django_assert_num_queries(1):
        found, token = ProfileTokenAuthentication().authenticate_credentials(plain)
        assert found == user and token.user.annotator is not None  # the profile came too


def test_old_plain_text_tokens_are_hashed_or_revoked(db, django_user_model):
    participant = django_user_model.objects.create_user("p", password=PASSWORD)
    staff = django_user_model.objects.create_user("s", password=PASSWORD, is_staff=True)
    old_p, old_s = "a1" * 20, "b2" * 20
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TABLE {legacy.LEGACY} "
            '("key" varchar(40) PRIMARY KEY, "created" timestamp, "user_id" integer)'
        )
        for key, owner in ((old_p, participant), (old_s, staff)):
            cursor.execute(
                f"INSERT INTO {legacy.LEGACY} VALUES (%s, %s, %s)", [key, timezone.now(), owner.pk]
            )
    legacy.hash_legacy_tokens(django_apps, connection.schema_editor())  # not entered: no DDL
    assert _me(old_p).status_code == 200  # a participant's client keeps working ...
    (kept,) = AuthToken.objects.all()
    assert kept.user == participant and kept.expiry is not None and old_p not in kept.digest
    _refused(_me(old_s))  # ... a staff token is revoked
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM {legacy.LEGACY}")
        assert cursor.fetchone() == (0,)  # no plain text left


def test_staff_revoke_tokens_in_the_admin_but_mint_none_there(admin_client, user):
    token, plain = tokens.issue(user)
    listing = admin_client.get("/admin/knox/authtoken/")
    assert listing.status_code == 200 and token.token_key in listing.content.decode()
    assert plain not in listing.content.decode()
    assert admin_client.get("/admin/knox/authtoken/add/").status_code == 403
    deleted = admin_client.post(f"/admin/knox/authtoken/{token.pk}/delete/", {"post": "yes"})
    assert deleted.status_code == 302
    _refused(_me(plain))
