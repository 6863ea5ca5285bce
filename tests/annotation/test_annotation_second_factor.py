"""The second factor for staff, tried as an attacker with the password would: the
portal's log-in, the admin's and the token endpoint each want a code of the account's
authenticator app (or a recovery code, once) before anything else; the enrolment page
(a QR code drawn offline) is open only to an account with no app yet or to a verified
session; a code is good once; a lost device is reset by a command; participants are
never asked."""

import base64
import io
import re

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from django_otp.plugins.otp_static.models import StaticDevice
from django_otp.plugins.otp_totp.models import TOTPDevice
from rest_framework.test import APIClient

from annotation.accounts.policy import needs_second_factor
from annotation.participants import services
from tests.second_factor_helpers import a_moment_later, app, code

PASSWORD = "Staff-pass-123"
ENROL = reverse("portal:second-factor-enrol")
VERIFY = reverse("portal:second-factor")
DASHBOARD = reverse("dashboards:progress")
ADMIN = "/admin/"


@pytest.fixture
def staff(db):
    """The admin as bin/run makes it (create_annotator --staff: staff and superuser)."""
    call_command(
        "create_annotator", "boss", "--password", PASSWORD, "--staff", stdout=io.StringIO()
    )
    return get_user_model().objects.get(username="boss")


def _password(client: Client, username: str = "boss", password: str = PASSWORD) -> None:
    response = client.post(reverse("portal:login"), {"username": username, "password": password})
    assert response.status_code == 302, "the password is right"


def _owes_the_code(client: Client) -> None:
    """Every staff surface refuses the session until it gives its code."""
    for url in (DASHBOARD, "/admin/", reverse("dashboards:quality")):
        response = client.get(url)
        assert response.status_code == 302 and response.url.startswith(VERIFY), url
    api = client.get("/api/staff/studies/")
    assert api.status_code == 403 and "second factor" in api.json()["detail"]


def _enrol(client: Client, user) -> list[str]:
    page = client.get(ENROL)
    assert page.status_code == 200
    device = TOTPDevice.objects.get(user=user, confirmed=False)
    done = client.post(ENROL, {"code": code(device), "next": ADMIN})
    assert done.status_code == 200
    return re.findall(r"<li><code>([a-z2-7]{8})</code></li>", done.content.decode())


def test_the_first_log_in_of_a_staff_account_enrols_an_app_with_a_qr_code(staff):
    client = Client()
    _password(client)
    _owes_the_code(client)
    assert client.get(VERIFY).url.startswith(ENROL)  # no app yet: enrol first
    page = client.get(ENROL).content.decode()
    (src,) = re.findall(r'<img class="qr-code" src="([^"]+)"', page)
    assert src.startswith("data:image/svg+xml;base64,")  # drawn here: no network, no CDN
    svg = base64.b64decode(src.split(",", 1)[1]).decode()
    assert svg.startswith("<svg") and "<path" in svg and "http" not in svg.split(">", 1)[1]
    assert not re.search(r"<script(?![^>]*\bsrc=)", page)  # no inline script (CSP)
    assert "recovery" not in page.lower()  # none exist yet: spoken of once they do
    device = TOTPDevice.objects.get(user=staff, confirmed=False)
    key = re.search(r'id="second-factor-key">([A-Z2-7 ]+)<', page).group(1).replace(" ", "")
    assert base64.b32decode(key) == device.bin_key  # the key, typed
    wrong = client.post(ENROL, {"code": "000000"})
    assert "wrong or has expired" in wrong.content.decode()
    _owes_the_code(client)
    a_moment_later(staff)
    codes = _enrol(client, staff)
    assert len(set(codes)) == 10  # ten recovery codes, shown once
    assert client.get(ADMIN).status_code == 200


def test_a_later_log_in_wants_a_code_and_the_password_alone_cannot_enrol_a_new_app(staff):
    device = app(staff)
    attacker = Client()
    _password(attacker)
    _owes_the_code(attacker)
    assert attacker.get(ENROL).url.startswith(VERIFY)  # no second app on a password alone
    assert attacker.post(ENROL, {"code": "123456"}).url.startswith(VERIFY)
    assert TOTPDevice.objects.filter(user=staff).count() == 1
    wrong = attacker.post(VERIFY, {"code": "000000"})
    assert "wrong or has expired" in wrong.content.decode()
    _owes_the_code(attacker)
    a_moment_later(staff)
    owner = Client()
    _password(owner)
    right = code(device)
    assert owner.post(VERIFY, {"code": right, "next": ADMIN}).url == ADMIN
    assert owner.get(ADMIN).status_code == 200
    again = Client()  # the same code, replayed
    _password(again)
    again.post(VERIFY, {"code": right})
    _owes_the_code(again)


def test_the_admins_own_log_in_page_leads_to_the_code_too(staff):
    device = app(staff)
    client = Client()
    response = client.post(
        reverse("admin:login"), {"username": "boss", "password": PASSWORD, "next": "/admin/"}
    )
    assert response.status_code == 302
    _owes_the_code(client)
    assert client.post(VERIFY, {"code": code(device), "next": "/admin/"}).url == "/admin/"
    assert client.get("/admin/").status_code == 200


def test_wrong_codes_make_the_app_wait_longer_each_time(staff):
    device = app(staff)
    client = Client()
    _password(client)
    for _ in range(4):
        client.post(VERIFY, {"code": "000000"})
        a_moment_later(staff)
    client.post(VERIFY, {"code": "000000"})  # the fifth wrong code in a row
    refused = client.post(VERIFY, {"code": code(device)}).content.decode()
    assert "wait 16 seconds" in refused  # 1, 2, 4, 8, 16: even the right code waits
    _owes_the_code(client)


def test_a_recovery_code_works_once(staff):
    client = Client()
    _password(client)
    (first, *_rest) = _enrol(client, staff)
    for attempt in range(2):
        other = Client()
        _password(other)
        response = other.post(VERIFY, {"code": first.upper(), "next": ADMIN})
        if attempt == 0:
            assert response.url == ADMIN and other.get(ADMIN).status_code == 200
        else:
            _owes_the_code(other)
    assert StaticDevice.objects.get(user=staff).token_set.count() == 9


def test_a_verified_session_makes_new_recovery_codes_an_unverified_one_cannot(staff):
    device = app(staff)
    client = Client()
    _password(client)
    refused = client.post(reverse("portal:second-factor-recovery-codes"))
    assert refused.status_code == 302 and not StaticDevice.objects.exists()
    client.post(VERIFY, {"code": code(device)})
    made = client.post(reverse("portal:second-factor-recovery-codes"))
    assert made.status_code == 200 and StaticDevice.objects.get(user=staff).token_set.count() == 10


def test_a_new_phone_from_a_verified_session_replaces_the_old_app(staff):
    old = app(staff)
    client = Client()
    _password(client)
    client.post(VERIFY, {"code": code(old)})
    _enrol(client, staff)
    (new,) = TOTPDevice.objects.filter(user=staff)
    assert new.pk != old.pk and new.confirmed


def test_reset_second_factor_forgets_a_lost_app(staff):
    device = app(staff)
    client = Client()
    _password(client)
    client.post(VERIFY, {"code": code(device)})
    assert client.get(ADMIN).status_code == 200
    from annotation.accounts.tokens import issue

    _, plain = issue(staff)  # a token issued after a code from the lost app
    out = io.StringIO()
    call_command("reset_second_factor", "boss", stdout=out)
    assert "forgotten" in out.getvalue() and not TOTPDevice.objects.exists()
    me = APIClient(HTTP_AUTHORIZATION=f"Token {plain}").get("/api/me/")
    assert me.status_code in (401, 403)  # revoked with it
    assert client.get(DASHBOARD).url.startswith(VERIFY)  # its sessions count no more
    assert client.get(VERIFY).url.startswith(ENROL)  # and the next step is a new app
    with pytest.raises(CommandError, match="no account named 'nobody'"):
        call_command("reset_second_factor", "nobody", stdout=io.StringIO())


def test_the_token_endpoint_issues_a_staff_token_only_after_the_code(staff):
    def token(**extra):
        body = {"username": "boss", "password": PASSWORD, **extra}
        return APIClient().post("/api/auth/token/", body, format="json")

    response = token()
    assert response.status_code == 403 and "log in on the portal" in response.json()["detail"]
    device = app(staff)
    response = token()
    assert response.status_code == 400 and "second factor" in response.json()["otp"][0]
    response = token(otp="000000")
    assert response.status_code == 400 and "Wrong or expired" in response.json()["otp"][0]
    response = token(otp=code(device))  # the right code, at once: the app waits first
    assert response.status_code == 400 and "wait 1 seconds" in response.json()["otp"][0]
    a_moment_later(staff)
    response = token(otp=code(device))
    assert response.status_code == 200
    api = APIClient(HTTP_AUTHORIZATION=f"Token {response.json()['token']}")
    assert api.get("/api/staff/studies/").status_code == 200


def test_participants_are_never_asked(db):
    user = get_user_model().objects.create_user("ann", password=PASSWORD)
    services.give_consent(services.get_profile(user))
    client = Client()
    _password(client, "ann")
    assert client.get(reverse("portal:home")).status_code == 200
    assert client.get(VERIFY).url == reverse("portal:home")
    assert client.get(ENROL).url == reverse("portal:home")
    token = APIClient().post("/api/auth/token/", {"username": "ann", "password": PASSWORD})
    assert token.status_code == 200
    assert not TOTPDevice.objects.exists()


def test_the_next_page_stays_on_this_site(staff):
    device = app(staff)
    client = Client()
    _password(client)
    response = client.post(VERIFY, {"code": code(device), "next": "https://evil.example/"})
    assert response.url == DASHBOARD


def test_who_needs_a_second_factor(db):
    make = get_user_model().objects.create_user
    assert not needs_second_factor(AnonymousUser())
    assert not needs_second_factor(make("p"))
    assert needs_second_factor(make("s", is_staff=True))
    assert needs_second_factor(make("root", is_superuser=True))


def test_the_admin_deletes_an_app_but_never_shows_its_key_nor_adds_one(admin_client, staff):
    device = app(staff)
    listing = admin_client.get("/admin/otp_totp/totpdevice/").content.decode()
    assert "boss" in listing
    page = admin_client.get(f"/admin/otp_totp/totpdevice/{device.pk}/change/").content.decode()
    assert device.key not in page and "qrcode" not in page.lower()
    assert admin_client.get("/admin/otp_totp/totpdevice/add/").status_code == 403
    codes = admin_client.get("/admin/otp_static/staticdevice/add/")
    assert codes.status_code == 403
    deleted = admin_client.post(f"/admin/otp_totp/totpdevice/{device.pk}/delete/", {"post": "yes"})
    assert deleted.status_code == 302 and not TOTPDevice.objects.filter(user=staff).exists()
