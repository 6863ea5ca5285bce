"""Media on the local file system (``STEREORANK_STORAGE=local``): Django's
``FileSystemStorage``, except that a file is written whole or not at all.

Django's own writes the file under its final name chunk by chunk; a write that fails
part-way (a full ``var/`` disk, a quota, a file-size limit) leaves the half-written file
there, under the name a later import of the same image would want. Here the bytes go to
a hidden ``.<random>.part`` file beside it first, which is then moved into place whole
(a rename in one folder); a failed write removes it, and the error goes up (a command
says it in one line: ``core.commands``).
"""

from __future__ import annotations

import os
import uuid
from contextlib import suppress

from django.core.files.storage import FileSystemStorage as DjangoFileSystemStorage


class _Staged:
    """A file already on disk, which Django's storage moves instead of copying."""

    def __init__(self, path: str):
        self.path = path

    def temporary_file_path(self) -> str:
        return self.path


class FileSystemStorage(DjangoFileSystemStorage):
    """Django's file system storage; a failed write leaves no file behind."""

    def _save(self, name, content):
        if hasattr(content, "temporary_file_path"):  # already whole on disk: moved
            return super()._save(name, content)
        folder = os.path.dirname(self.path(name))
        os.makedirs(folder, exist_ok=True)
        staged = os.path.join(folder, f".{uuid.uuid4().hex}.part")
        try:
            with open(staged, "xb") as out:
                for chunk in content.chunks():
                    out.write(chunk if isinstance(chunk, bytes) else chunk.encode())
            return super()._save(name, _Staged(staged))
        finally:
            with suppress(FileNotFoundError):
                os.remove(staged)
