"""The second factor (django-otp): a TOTP authenticator app, and recovery codes.

An account that needs one (``policy.needs_second_factor``) enrols once: the portal shows
a QR code (drawn here, an SVG data URI: offline, no script) of a new, unconfirmed TOTP
device; the first right code confirms it and brings ten recovery codes, each good once,
shown once. Afterwards every log-in (portal, admin) asks for a code before anything
else, and the token endpoint wants one before it issues a token. A lost device is reset
by ``manage.py reset_second_factor USERNAME``: the next log-in enrols again.

A wrong code counts on the device (django-otp's throttle, in the database: each failure
doubles the wait before the next try), on top of the password lockout.
"""

from __future__ import annotations

import base64
import math
import re
from dataclasses import dataclass

import qrcode
import qrcode.image.svg
from django.db import transaction
from django.utils import timezone
from django_otp import verify_token
from django_otp.models import Device
from django_otp.plugins.otp_static.models import StaticDevice, StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice

from annotation.accounts.tokens import revoke_all

RECOVERY_CODES = 10
APP_DEVICE = "authenticator app"
RECOVERY_DEVICE = "recovery codes"
_TOTP_CODE = re.compile(r"^\d{6}$")


def enrolled(user) -> bool:
    """Whether ``user`` has a confirmed authenticator app."""
    return TOTPDevice.objects.devices_for_user(user, confirmed=True).exists()


def pending_device(user) -> TOTPDevice:
    """The unconfirmed authenticator app being enrolled (the same one until confirmed, so
    reloading the page keeps its QR code)."""
    device = TOTPDevice.objects.devices_for_user(user, confirmed=False).first()
    return device or TOTPDevice.objects.create(user=user, name=APP_DEVICE, confirmed=False)


def qr_data_uri(device: TOTPDevice) -> str:
    """The device's ``otpauth://`` URL as a QR code: an SVG ``data:`` URI for an ``<img>``."""
    image = qrcode.make(
        device.config_url, image_factory=qrcode.image.svg.SvgPathFillImage, box_size=10, border=4
    )
    return "data:image/svg+xml;base64," + base64.b64encode(image.to_string()).decode("ascii")


def secret(device: TOTPDevice) -> str:
    """The device's key as an app types it (base32, in groups of four)."""
    key = base64.b32encode(device.bin_key).decode("ascii").rstrip("=")
    return " ".join(key[i : i + 4] for i in range(0, len(key), 4))


def confirm(device: TOTPDevice, code: str) -> list[str] | None:
    """Confirm an enrolment with the app's first code: the app replaces any earlier one
    and new recovery codes replace the old; those codes (to show once), or None when
    the code is wrong."""
    with transaction.atomic():
        if not verify_token(device.user, device.persistent_id, _clean(code)):
            return None
        TOTPDevice.objects.filter(user=device.user).exclude(pk=device.pk).delete()
        TOTPDevice.objects.filter(pk=device.pk).update(confirmed=True)
        device.confirmed = True
        return new_recovery_codes(device.user)


def new_recovery_codes(user) -> list[str]:
    """Ten fresh recovery codes for ``user`` (the old ones stop working), to show once."""
    with transaction.atomic():
        StaticDevice.objects.filter(user=user).delete()
        device = StaticDevice.objects.create(user=user, name=RECOVERY_DEVICE, confirmed=True)
        codes = [StaticToken.random_token() for _ in range(RECOVERY_CODES)]
        StaticToken.objects.bulk_create(StaticToken(device=device, token=c) for c in codes)
    return codes


@dataclass(frozen=True)
class Check:
    """What a code did: the device that accepted it, or the seconds to wait before the
    next try (0: the code was tried, and is wrong)."""

    device: Device | None
    wait: int = 0


def check(user, code: str) -> Check:
    """Try ``code`` (six digits: the app; anything else: a recovery code, used up) on
    ``user``'s confirmed devices of its kind. A device that failed just before refuses
    to try (django-otp's throttle: each failure doubles its wait)."""
    code = _clean(code)
    kind = TOTPDevice if _TOTP_CODE.match(code) else StaticDevice
    wait = 0
    for device in kind.objects.devices_for_user(user, confirmed=True) if code else ():
        allowed, why = device.verify_is_allowed()
        if not allowed:
            wait = max(wait, math.ceil((why["locked_until"] - timezone.now()).total_seconds()))
            continue
        found = verify_token(user, device.persistent_id, code)
        if found is not None:
            return Check(found)
    return Check(None, wait)


def reset(user) -> int:
    """Forget every device of ``user`` (app and recovery codes) and revoke their API tokens
    (issued after a code from the lost app); how many devices there were. Sessions they
    verified are no longer verified."""
    apps, codes = TOTPDevice.objects.filter(user=user), StaticDevice.objects.filter(user=user)
    count = apps.count() + codes.count()
    apps.delete()
    codes.delete()
    revoke_all(user)
    return count


def _clean(code: str) -> str:
    """A code as typed: spaces and dashes out, lower case (recovery codes are)."""
    return re.sub(r"[\s-]", "", code or "").lower()
