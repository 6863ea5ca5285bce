"""What a block queued after its commit (``core.queue.after_commit``), read from the
on-commit callbacks that ``django_capture_on_commit_callbacks`` captured."""

from __future__ import annotations


def queued(callbacks) -> list[tuple[str, tuple]]:
    """The tasks the captured callbacks send, as (name, args), in order."""
    from core.queue import send_message

    sends = [c for c in callbacks if getattr(c, "func", None) is send_message]
    return [(c.args[0].task, tuple(c.args[0].args)) for c in sends]
