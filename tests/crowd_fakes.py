"""Stand-ins for the crowd platforms, which tests cannot reach (no network, no accounts).

Each fake does only what the platform's documentation says it does at our border:

- Prolific: the study URL carries ``{{%PROLIFIC_PID%}}``, ``{{%STUDY_ID%}}`` and
  ``{{%SESSION_ID%}}`` placeholders that Prolific replaces per participant (a 24-hex
  id); a finished participant is sent to
  ``https://app.prolific.com/submissions/complete?cc=<completion code>``.
- Amazon Mechanical Turk: an external link gets ``hitId``, ``assignmentId``,
  ``turkSubmitTo`` and ``workerId`` appended; a preview sends
  ``assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE`` and no worker.

They check nothing about the real services: a change on the platforms' side would
not be caught here.
"""

from __future__ import annotations

import secrets
from urllib.parse import parse_qs, urlencode, urlsplit


class FakeProlific:
    """Turns a study URL with placeholders into one participant's link, and reads the
    completion code back from where the participant is sent at the end."""

    STUDY_URL = (
        "/join/{slug}/?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}"
        "&SESSION_ID={{%SESSION_ID%}}"
    )

    def __init__(self, slug: str, study_id: str | None = None):
        self.template = self.STUDY_URL.replace("{slug}", slug)
        self.study_id = study_id or secrets.token_hex(12)
        self.sessions: dict[str, str] = {}  # one submission per participant, as on Prolific

    @staticmethod
    def new_participant_id() -> str:
        return secrets.token_hex(12)

    def link(self, participant_id: str, session_id: str | None = None) -> str:
        return (
            self.template.replace("{{%PROLIFIC_PID%}}", participant_id)
            .replace("{{%STUDY_ID%}}", self.study_id)
            .replace(
                "{{%SESSION_ID%}}",
                session_id or self.sessions.setdefault(participant_id, secrets.token_hex(12)),
            )
        )

    @staticmethod
    def completion_code(url: str) -> str:
        """The ``cc`` of Prolific's completion URL; anything else is not Prolific's."""
        parts = urlsplit(url)
        assert (parts.scheme, parts.netloc, parts.path) == (
            "https",
            "app.prolific.com",
            "/submissions/complete",
        ), url
        return parse_qs(parts.query)["cc"][0]


class FakeMTurk:
    """Appends what MTurk appends to an external link, for a worker or for a preview."""

    def __init__(self, slug: str):
        self.base = f"/join/{slug}/"
        self.hit_id = secrets.token_hex(10).upper()

    def link(self, worker_id: str, assignment_id: str | None = None) -> str:
        return (
            self.base
            + "?"
            + urlencode(
                {
                    "hitId": self.hit_id,
                    "assignmentId": assignment_id or f"A-{worker_id}",
                    "turkSubmitTo": "https://www.mturk.com",
                    "workerId": worker_id,
                }
            )
        )

    def preview_link(self) -> str:
        return (
            self.base
            + "?"
            + urlencode({"hitId": self.hit_id, "assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE"})
        )


def join(client, link: str, action: str = "agree"):
    """What a participant's browser does with the link a platform sends: open the study's
    consent page (a GET) and answer it with the page's own form (a POST: ``agree``,
    ``decline``, or ``continue`` on a returning browser's page); the POST's answer. A page
    with no such form (a refusal, a preview, a redirect) is returned as it came."""
    page = client.get(link)
    token = page.context.get("token") if page.status_code == 200 and page.context else None
    if token is None:
        return page
    return client.post(link, {"action": action, "token": token})
