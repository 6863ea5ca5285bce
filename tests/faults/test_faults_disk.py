"""A full ``var/`` disk (issue 33, part 6): what the project writes there fails with one
clear line and leaves nothing half written.

What writes under ``var/``: item images (``MEDIA_ROOT``, the media storage:
``core/storage.py``), exports written to a file (``write_lines``), checkpoints
(``training.ml.checkpoints.save``: a temporary folder renamed whole, removed on any
error), the embedded SQLite database, the embedded broker's queue folder and the health
cache (Django's file cache: a temporary file moved into place).

The full disk: each write runs in a forked child whose files may not grow past a few
kilobytes (``RLIMIT_FSIZE``; Python ignores ``SIGXFSZ``, so the write fails with EFBIG
as it would with ENOSPC on a full disk). The child never touches this process's database
connection.
"""

from __future__ import annotations

import io
import json
import os
import resource
import sqlite3
from pathlib import Path

from django.core.files.base import ContentFile

from annotation.management.commands._output import write_lines
from core.commands import ServiceCommand
from core.storage import FileSystemStorage

LIMIT = 4096
"""Bytes a file may hold in the child: what fits on the "disk"."""


def on_a_full_disk(work) -> dict:
    """``work()``'s JSON answer, run in a forked child whose files stop at ``LIMIT``
    bytes; ``{"raised": "Type: message"}`` if it raised."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: answer through the pipe, leave without any clean-up
        os.close(read)
        try:
            resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, resource.RLIM_INFINITY))
            answer = work()
        except BaseException as error:  # noqa: BLE001 - reported to the parent
            answer = {"raised": f"{type(error).__name__}: {error}"}
        os.write(write, json.dumps(answer).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        answer = pipe.read()
    os.waitpid(pid, 0)
    return json.loads(answer)


class Export(ServiceCommand):
    """A command that exports many lines to ``--out``, as export_rankings does."""

    def add_arguments(self, parser):
        parser.add_argument("--out")

    def handle(self, *args, out, **options):
        write_lines((f'{{"ranking": {n}}}\n' for n in range(2000)), out)


def _run_export(out: Path) -> dict:
    stderr = io.StringIO()
    command = Export(stderr=stderr)
    try:
        command.run_from_argv(["manage.py", "export", "--out", str(out)])
    except SystemExit as exit:
        return {"exit": exit.code, "stderr": stderr.getvalue()}
    return {"exit": 0, "stderr": stderr.getvalue()}


def test_an_export_to_a_full_disk_says_so_in_one_line_and_keeps_the_last_one(tmp_path):
    out = tmp_path / "var" / "exports" / "rankings.jsonl"
    out.parent.mkdir(parents=True)
    out.write_text('{"ranking": "the last export"}\n')

    answer = on_a_full_disk(lambda: _run_export(out))

    assert answer["exit"] == 1, answer
    assert answer["stderr"].splitlines() == [f"CommandError: cannot write {out}: File too large"]
    assert [p.name for p in out.parent.iterdir()] == ["rankings.jsonl"]  # no temporary file
    assert out.read_text() == '{"ranking": "the last export"}\n'  # the last export, whole
    assert _run_export(out)["exit"] == 0 and len(out.read_text().splitlines()) == 2000


def test_an_image_that_does_not_fit_leaves_no_file_and_one_that_fits_is_stored(tmp_path):
    storage = FileSystemStorage(location=tmp_path / "media")

    def save_both() -> dict:
        small = storage.save("items/small.png", ContentFile(b"p" * 100))
        try:
            storage.save("items/large.png", ContentFile(b"p" * 100_000))
        except OSError as error:
            return {"small": small, "error": error.strerror}
        return {"small": small, "error": None}

    answer = on_a_full_disk(save_both)

    assert answer == {"small": "items/small.png", "error": "File too large"}
    assert [p.name for p in (tmp_path / "media" / "items").iterdir()] == ["small.png"]
    assert storage.save("items/large.png", ContentFile(b"p" * 100_000)) == "items/large.png"
    assert (tmp_path / "media" / "items" / "large.png").stat().st_size == 100_000


def test_the_embedded_database_on_a_full_disk_refuses_the_write_and_keeps_the_rest(tmp_path):
    path = tmp_path / "db.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE ranking (id INTEGER PRIMARY KEY, body TEXT)")
        db.execute("INSERT INTO ranking (body) VALUES ('stored before')")

    def write_more() -> dict:
        db = sqlite3.connect(path)
        try:
            with db:
                db.execute("INSERT INTO ranking (body) VALUES (?)", ("x" * 100_000,))
        except sqlite3.Error as error:
            return {"error": type(error).__name__}
        return {"error": None}

    # sqlite3's OperationalError: Django raises its OperationalError, an outage answered
    # 503 (web/views.py; tests/project/test_project_outage.py), and the submit is retried.
    assert on_a_full_disk(write_more) == {"error": "OperationalError"}
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert db.execute("SELECT body FROM ranking").fetchall() == [("stored before",)]
