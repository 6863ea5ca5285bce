"""Password lockout at every password door (the portal's log-in, the admin's, the API's
token endpoint), tried as an attacker would: eleven wrong passwords, then the right one,
which must be refused; an (account, address) pair at 10, an account from every address at
its higher count, an address that tried 20 accounts; one person's mistakes never lock
the others behind their address out; a forged X-Forwarded-For escapes nothing; the
cool-off ends it; ``manage.py unlock`` lifts it; and it holds with the cache (Redis)
unreachable, since axes counts in the database."""

import io
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.contrib.auth import get_user_model
from django.core.cache import caches
from django.core.management import CommandError, call_command
from django.db.models import F
from django.test import Client, override_settings
from django.urls import reverse
from rest_framework.test import APIClient

RIGHT = "the-Right-pass-1"
# The cache on a port where nothing listens (as tests/project/test_project_cache_outage.py).
DEAD = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": "redis://127.0.0.1:1/0",
        "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
    }
}


def _portal(username, password, address="10.0.0.1", **extra):
    client = Client(REMOTE_ADDR=address, **extra)
    response = client.post(reverse("portal:login"), {"username": username, "password": password})
    return response, "_auth_user_id" in client.session


def _admin(username, password, address="10.0.0.1", **extra):
    client = Client(REMOTE_ADDR=address, **extra)
    response = client.post(
        reverse("admin:login"), {"username": username, "password": password, "next": "/admin/"}
    )
    return response, "_auth_user_id" in client.session


def _token(username, password, address="10.0.0.1", **extra):
    client = APIClient(REMOTE_ADDR=address, **extra)
    response = client.post(
        "/api/auth/token/", {"username": username, "password": password}, format="json"
    )
    return response, response.status_code == 200 and "token" in response.json()


DOORS = {"portal": _portal, "admin": _admin, "token": _token}


@pytest.fixture(autouse=True)
def _fresh_throttles():
    """The auth throttle (30 a minute per address) counts in the cache: each test starts
    from none, so a 429 here is the lockout's (its message says so)."""
    caches["default"].clear()


@pytest.fixture
def account(db):
    """account(name, staff=False): a user whose password is RIGHT."""

    def make(name: str = "alice", staff: bool = False):
        return get_user_model().objects.create_user(name, password=RIGHT, is_staff=staff)

    return make


def _assert_locked(response, door: str) -> None:
    assert response.status_code == 429, (door, response.status_code)
    assert int(response["Retry-After"]) == 30 * 60
    text = response.json()["detail"] if door == "token" else response.content.decode()
    assert "Too many failed log-ins" in text and "30 minutes" in text


@pytest.mark.parametrize("door", DOORS)
def test_eleven_wrong_passwords_then_the_right_one_is_refused(account, door):
    account("alice", staff=door == "admin")  # the admin lets only staff in
    attempt = DOORS[door]
    first, got_in = attempt("alice", "wrong-0")
    assert not got_in and first.status_code in (200, 400)  # an ordinary refusal at first
    for i in range(1, 11):
        response, got_in = attempt("alice", f"wrong-{i}")
        assert not got_in
    _assert_locked(response, door)
    response, got_in = attempt("alice", RIGHT)
    assert not got_in, f"{door}: the right password got through a lockout"
    _assert_locked(response, door)


def test_the_right_password_before_the_limit_gets_in(account):
    account("alice")
    for i in range(9):
        assert not _token("alice", f"wrong-{i}")[1]
    assert _token("alice", RIGHT)[1]


def test_a_participants_mistakes_do_not_lock_the_admin_out_of_their_address(account):
    """A lab room (or a NAT, or a proxy count set wrong) puts everyone behind one address:
    one person's ten wrong passwords lock that person there, not the address."""
    account("participant")
    account("admin", staff=True)
    for i in range(11):
        assert not _portal("participant", f"wrong-{i}", address="127.0.0.1")[1]
    response, got_in = _portal("participant", RIGHT, address="127.0.0.1")
    assert not got_in
    _assert_locked(response, "portal")  # the pair locks
    for door in (_portal, _admin):  # every door, the same address: the admin gets in
        assert door("admin", RIGHT, address="127.0.0.1")[1]
    response, _ = _token("admin", RIGHT, address="127.0.0.1")  # the password taken:
    assert "needs a second factor" in response.json()["detail"]  # the next step asked
    assert _portal("participant", RIGHT, address="10.0.0.2")[1]  # elsewhere, not locked


def test_an_account_locks_from_every_address_at_its_higher_count(account, settings):
    """A guesser with many addresses (the count lowered to 15 from 50 for the test's time)."""
    settings.LOCKOUT_ACCOUNT_FAILURES = 15
    account("alice")
    for i in range(14):
        assert not _portal("alice", "wrong", address=f"10.0.1.{i}")[1]
    assert _token("alice", RIGHT, address="10.0.2.1")[1]  # 14 failures: still in
    assert not _portal("alice", "wrong", address="10.0.1.99")[1]
    for door in DOORS.values():  # the 15th: a new address, every door
        response, got_in = door("alice", RIGHT, address="10.0.2.1")
        assert not got_in and response.status_code == 429
    account("bob")  # another account from those addresses is not locked
    assert _token("bob", RIGHT, address="10.0.1.3")[1]


def _spray(accounts: int, **where) -> None:
    """One wrong password for each of ``accounts`` names (none of them real)."""
    for i in range(accounts):
        _token(f"user-{i}", "guess", **where)


def test_an_address_that_tried_twenty_accounts_locks(account):
    account("carol")
    _spray(19, address="10.0.3.1")
    assert _token("carol", RIGHT, address="10.0.3.1")[1]  # 19 accounts: not yet
    _spray(20, address="10.0.3.1")  # the same 19 again, and one more
    response, got_in = _token("carol", RIGHT, address="10.0.3.1")
    assert not got_in and response.status_code == 429
    assert _token("carol", RIGHT, address="10.0.3.2")[1]  # another address is not


def test_a_forged_forwarded_for_header_does_not_escape_the_address_lock(account):
    account("carol")
    for i in range(20):
        _token(f"user-{i}", "guess", HTTP_X_FORWARDED_FOR=f"192.0.2.{i}")
    response, got_in = _token("carol", RIGHT, HTTP_X_FORWARDED_FOR="192.0.2.200")
    assert not got_in and response.status_code == 429


def test_the_cool_off_ends_the_lock(account):
    account("alice")
    for i in range(11):
        _token("alice", f"wrong-{i}")
    assert not _token("alice", RIGHT)[1]
    AccessAttempt.objects.update(attempt_time=F("attempt_time") - timedelta(minutes=31))
    assert _token("alice", RIGHT)[1]


def test_unlock_lifts_an_accounts_lock(account):
    account("alice")
    for i in range(11):
        _portal("alice", f"wrong-{i}")
    out = io.StringIO()
    call_command("unlock", "alice", stdout=out)
    assert "unlocked 'alice'" in out.getvalue()
    assert _portal("alice", RIGHT)[1]
    out = io.StringIO()
    call_command("unlock", "alice", stdout=out)
    assert "was not locked" in out.getvalue()


def test_unlock_lifts_an_addresss_lock(account):
    account("carol")
    _spray(20, address="10.0.3.1")
    assert not _token("carol", RIGHT, address="10.0.3.1")[1]
    call_command("unlock", "--address", "10.0.3.1", stdout=io.StringIO())
    assert _token("carol", RIGHT, address="10.0.3.1")[1]


@pytest.mark.parametrize(
    ("argv", "says"),
    [((), "name an account"), (("nobody",), "no account named 'nobody'")],
)
def test_unlock_refuses_what_it_cannot_do(db, argv, says):
    with pytest.raises(CommandError, match=says):
        call_command("unlock", *argv, stdout=io.StringIO())


def test_the_lock_holds_with_the_cache_down(account):
    """Redis unreachable (a dead port; the shared Redis is left alone): the throttles fail
    open, the lockout, counted in the database, does not."""
    account("alice")
    with override_settings(CACHES=DEAD):
        for i in range(11):
            _token("alice", f"wrong-{i}")
            _portal("alice", f"wrong-{i}", address="10.0.9.9")
        for door in ("token", "portal"):
            response, got_in = DOORS[door]("alice", RIGHT)
            assert not got_in
            _assert_locked(response, door)
