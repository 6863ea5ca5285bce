"""The second factor in tests (imported as ``tests.second_factor_helpers``): a confirmed
authenticator app for an account, the code it shows now, a session marked verified."""

from datetime import timedelta

from django.db.models import F
from django_otp import DEVICE_ID_SESSION_KEY
from django_otp.oath import totp
from django_otp.plugins.otp_static.models import StaticDevice
from django_otp.plugins.otp_totp.models import TOTPDevice


def app(user) -> TOTPDevice:
    """``user``'s confirmed authenticator app (made on first use)."""
    device, _ = TOTPDevice.objects.get_or_create(
        user=user, confirmed=True, defaults={"name": "authenticator app"}
    )
    return device


def code(device: TOTPDevice, steps: int = 0) -> str:
    """The 6 digits ``device`` shows now (``steps`` periods later or earlier)."""
    return f"{totp(device.bin_key, device.step, device.t0, device.digits, steps):06d}"


def verify_session(client, user) -> None:
    """Mark the logged-in session of ``client`` verified by ``user``'s app, as
    ``django_otp.login`` does after a right code."""
    session = client.session
    session[DEVICE_ID_SESSION_KEY] = app(user).persistent_id
    session.save()


def a_moment_later(user) -> None:
    """Time passes for ``user``'s devices: the wait a wrong code started is over."""
    for model in (TOTPDevice, StaticDevice):
        model.objects.filter(user=user, throttling_failure_timestamp__isnull=False).update(
            throttling_failure_timestamp=F("throttling_failure_timestamp") - timedelta(hours=1)
        )
