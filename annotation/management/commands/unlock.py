"""``manage.py unlock USERNAME [--address IP]``: lift a password lockout."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotation.accounts import lockout


class Command(BaseCommand):
    help = (
        "Lift a password lockout: forget the failed log-ins of an account (USERNAME), "
        "of an address (--address), or both."
    )

    def add_arguments(self, parser):
        parser.add_argument("username", nargs="?", help="the account to unlock")
        parser.add_argument("--address", help="an IP address to unlock as well (or alone)")

    def handle(self, *args, username, address, **options):
        if not username and not address:
            raise CommandError("unlock: name an account (USERNAME) or an address (--address)")
        removed = lockout.unlock(username=username, address=address)
        known = get_user_model().objects.filter(username=username).exists()
        if username and not removed and not known:
            raise CommandError(f"unlock: no account named {username!r}")
        who = " and ".join(
            part for part in (username and repr(username), address and f"address {address}") if part
        )
        if removed:
            self.stdout.write(f"unlocked {who}: {removed} record(s) of failed log-ins forgotten")
        else:
            self.stdout.write(f"{who} was not locked (no failed log-ins on record)")
