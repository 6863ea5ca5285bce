"""``manage.py reset_second_factor USERNAME``: forget a lost authenticator app."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotation.accounts import second_factor


class Command(BaseCommand):
    help = (
        "Forget an account's second factor (its authenticator app and recovery codes), "
        "for a lost phone: its sessions stop counting as verified, and its next log-in "
        "sets up a new app. Check who is asking before running it."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")

    def handle(self, *args, username, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"reset_second_factor: no account named {username!r}")
        removed = second_factor.reset(user)
        if removed:
            self.stdout.write(
                f"{username}: second factor forgotten ({removed} device(s)); "
                "the next log-in sets up a new authenticator app"
            )
        else:
            self.stdout.write(f"{username} had no second factor set up")
