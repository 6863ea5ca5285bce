"""An import's refusals: one line naming the record (or the file, the owner, the source)."""

from annotation.errors import AnnotationError
from core.errors import Conflict, Forbidden


class ImportRefused(AnnotationError):
    """A file, or a record of it, that cannot be imported: nothing of the file is written."""


class NotAnOwner(AnnotationError, Forbidden):
    """The basis of an import is an owner's statement; this account owns no such study."""


class BasisWithdrawn(AnnotationError, Conflict):
    """The source's basis was withdrawn: nothing more of it is imported, nor counted."""
