"""A written release pushed to the Hugging Face Hub with ``huggingface_hub``: a new dataset
repository, private unless asked otherwise (``HfApi.create_repo(repo_type="dataset",
private=...)``), then the folder in one commit (``HfApi.upload_folder``).

The token is huggingface_hub's own ``HF_TOKEN``, passed to it and never printed: a refusal
names the repository and the Hub's status, and any copy of the token in the Hub's message
is masked. ``HF_ENDPOINT`` (the Hub's address, read when the push starts) points it at
another Hub. An existing repository is refused, not written into: it may be public, and a
release cannot be recalled.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from training.errors import ReleaseError

REPO = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")
"""``owner/name``, as the Hub spells a repository."""


def _offline() -> bool:
    from huggingface_hub import constants

    return constants.is_offline_mode()


def check_ready(repo: str) -> None:
    """Before anything is written: ``ReleaseError`` when a push to ``repo`` cannot start
    (a malformed id, no ``HF_TOKEN``, the Hub off)."""
    if not REPO.fullmatch(repo):
        raise ReleaseError(f"{repo!r} is no Hub repository id: use OWNER/NAME")
    if not os.environ.get("HF_TOKEN"):
        raise ReleaseError("set HF_TOKEN to a Hugging Face token that may write to push")
    if _offline():
        raise ReleaseError("HF_HUB_OFFLINE is set: unset it to push")


def _masked(text: str, token: str) -> str:
    return " ".join(text.replace(token, "***").split())


def push_release(folder: Path, repo: str, *, public: bool = False) -> str:
    """Create the dataset repository ``repo`` (private unless ``public``) and upload
    ``folder`` to it in one commit; its URL. ``ReleaseError`` when the Hub refuses (the
    release stays in ``folder``)."""
    import httpx
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError

    check_ready(repo)
    token = os.environ["HF_TOKEN"]
    api = HfApi(endpoint=os.environ.get("HF_ENDPOINT") or None, token=token)
    try:
        url = api.create_repo(repo, repo_type="dataset", private=not public)
        api.upload_folder(
            folder_path=str(folder),
            repo_id=repo,
            repo_type="dataset",
            commit_message=f"stereorank release ({folder.name})",
        )
    except HfHubHTTPError as error:
        status = error.response.status_code if error.response is not None else "no answer"
        why = "it exists already: push a release to a new one" if status == 409 else ""
        detail = why or _masked(str(error).splitlines()[0], token)
        raise ReleaseError(
            f"the Hub refused {repo} ({status}): {detail}; the release is in {folder}"
        ) from None
    except (OSError, httpx.HTTPError) as error:  # no connection, a time-out
        raise ReleaseError(
            f"the Hub could not be reached for {repo}: {_masked(str(error), token)}; the "
            f"release is in {folder}"
        ) from None
    return str(url)
