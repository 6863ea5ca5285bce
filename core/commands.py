"""The management commands' base: a service's refusal is one line on stderr and exit 1,
and so is a write the disk refused (full, over a quota or a size limit, read-only)."""

import errno

from django.core.management.base import BaseCommand, CommandError

from core.errors import StereorankError

DISK_REFUSED = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS}
"""What a write gets from a disk with no room (or none it may use): not a bug."""


class ServiceCommand(BaseCommand):
    """A management command whose service refusals exit 1 with one line on stderr."""

    def execute(self, *args, **options):
        try:
            return super().execute(*args, **options)
        except StereorankError as error:
            raise CommandError(error.message) from error
        except OSError as error:
            if error.errno not in DISK_REFUSED:
                raise
            where = f" {error.filename}" if error.filename else ""
            raise CommandError(f"cannot write{where}: {error.strerror}") from error
