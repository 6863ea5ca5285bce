"""The management commands' base: a service's refusal is one line on stderr and exit 1."""

from django.core.management.base import BaseCommand, CommandError

from core.errors import StereorankError


class ServiceCommand(BaseCommand):
    """A management command whose service refusals exit 1 with one line on stderr."""

    def execute(self, *args, **options):
        try:
            return super().execute(*args, **options)
        except StereorankError as error:
            raise CommandError(error.message) from error
