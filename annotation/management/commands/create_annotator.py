from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from annotation import services


class Command(BaseCommand):
    help = "Create (or update the password of) an annotator account."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--password", required=True)
        parser.add_argument("--consent", action="store_true", help="record consent now")
        parser.add_argument("--staff", action="store_true", help="staff and admin access")

    @transaction.atomic
    def handle(self, *args, username, password, consent, staff, **options):
        user, created = get_user_model().objects.get_or_create(username=username)
        user.set_password(password)
        if staff:
            user.is_staff = user.is_superuser = True
        user.save()
        profile = services.get_profile(user)
        if consent:
            services.give_consent(profile)
        self.stdout.write(f"{'created' if created else 'updated'} {username}")
