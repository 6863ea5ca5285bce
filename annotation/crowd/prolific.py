"""Prolific's API behind ``CrowdPlatform`` (``annotation.crowd.platform``).

Followed, on docs.prolific.com's API reference (read 2026-12):
- Authentication: ``Authorization: Token <token>`` (Introduction).
- Studies: "Create a draft study" ``POST /api/v1/studies/`` (``internal_name``,
  ``external_study_url`` with ``{{%PROLIFIC_PID%}}``, ``{{%STUDY_ID%}}``,
  ``{{%SESSION_ID%}}``, ``prolific_id_option: url_parameters``, ``completion_codes`` as
  typed codes with actions, ``total_available_places``, ``reward`` in cents,
  ``estimated_completion_time`` in minutes, ``filters``); "List studies"
  ``GET /api/v1/studies/``; "Update a study" ``PATCH /api/v1/studies/{id}/``; "Transition
  a study" ``POST /api/v1/studies/{id}/transition/`` (``PUBLISH``, ``PAUSE``, ``START``).
- Filters: "List filters" ``GET /api/v1/filters/`` (``filter_id``, ``type`` select or
  range, ``choices``).
- Submissions: "List submissions" ``GET /api/v1/studies/{id}/submissions/``; "Retrieve a
  submission" ``GET /api/v1/submissions/{id}/`` (``bonus_payments`` in cents: what was
  paid); "Approve or reject a submission" ``POST /api/v1/submissions/{id}/transition/``
  (``REJECT`` needs ``rejection_category`` and a ``message`` of at least 100 characters;
  documented idempotent, so retried).
- Bonuses: "Set up bonuses" ``POST /api/v1/submissions/bonus-payments/`` (``study_id``,
  ``csv_bonuses`` of ``<submission_id>,<amount>`` lines, the amount in the study's
  currency as a decimal; answers the bulk payment's ``id`` and ``total_amount`` in
  cents); "Pay bonuses" ``POST /api/v1/bulk-bonus-payments/{id}/pay/``: documented NOT
  idempotent (a repeated call pays everyone again) and asynchronous, so sent once and
  never retried.

Time-outs, dropped connections, 429 (``Retry-After`` honoured) and 5xx are retried with
exponential back-off, except the pay call; a study's creation is retried only after
looking for it by its ``internal_name``, so a lost answer never makes two. The token is
sent in a header and appears in no message, log line or file.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from decimal import Decimal
from urllib.parse import urlsplit

import httpx

from annotation.crowd.platform import (
    AnswerLost,
    BonusSetUp,
    PlatformError,
    RemoteStudy,
    RemoteSubmission,
    StudyDraft,
)

REJECTION_MESSAGE_MIN = 100  # characters, per "Approve or reject a submission"
_RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})
_MAX_RETRY_AFTER_S = 60.0


class _Retryable(Exception):
    def __init__(self, why: str, wait: float | None = None):
        super().__init__(why)
        self.why, self.wait = why, wait


class Prolific:
    """A Prolific client; ``sleep`` and ``backoff_s`` are there for the tests' clock."""

    name = "prolific"

    def __init__(
        self,
        token: str,
        api_url: str = "https://api.prolific.com",
        timeout: float = 20.0,
        tries: int = 4,
        backoff_s: float = 1.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not token:
            raise PlatformError(
                "No Prolific token: set STEREORANK_PROLIFIC_TOKEN (an API token from "
                "Prolific's settings page)."
            )
        if not _safe_root(api_url):
            raise PlatformError(
                "STEREORANK_PROLIFIC_API_URL must be an https:// address (the token travels "
                "with every call); plain http only to this machine, for tests."
            )
        self.root = api_url.rstrip("/") + "/api/v1"
        self._token = token
        self.tries, self.backoff_s, self._sleep = max(1, tries), backoff_s, sleep
        self._http = httpx.Client(
            timeout=timeout, headers={"Authorization": f"Token {token}"}, follow_redirects=False
        )

    def close(self) -> None:
        self._http.close()

    # ---- the calls -------------------------------------------------------------------

    def filters(self) -> list[dict]:
        return self._pages("GET", "/filters/")

    def find_study(self, internal_name: str) -> RemoteStudy | None:
        for row in self._pages("GET", "/studies/"):
            if row.get("internal_name") == internal_name:
                return _study(row)
        return None

    def create_study(self, draft: StudyDraft) -> RemoteStudy:
        body = create_body(draft)
        for attempt in range(self.tries):
            try:
                return _study(self._once("POST", "/studies/", body))
            except _Retryable as retry:
                # The study may have been made although the answer was lost: look first.
                self._wait(attempt, retry)
                if found := self.find_study(draft.internal_name):
                    return found
        raise PlatformError(f"Prolific did not create the study after {self.tries} tries.")

    def transition(self, study_id: str, action: str) -> None:
        self._call("POST", f"/studies/{study_id}/transition/", {"action": action})

    def set_screening(self, study_id: str, filters: list[dict]) -> None:
        self._call("PATCH", f"/studies/{study_id}/", {"filters": filters})

    def study_currency(self, study_id: str) -> str:
        row = self._call("GET", f"/studies/{study_id}/")
        return row.get("presentment_currency_code") or row.get("currency_code") or ""

    def submissions(self, study_id: str) -> list[RemoteSubmission]:
        return [_submission(row) for row in self._pages("GET", f"/studies/{study_id}/submissions/")]

    def submission(self, submission_id: str) -> RemoteSubmission:
        return _submission(self._call("GET", f"/submissions/{submission_id}/"))

    def approve(self, submission_id: str) -> None:
        self._call("POST", f"/submissions/{submission_id}/transition/", {"action": "APPROVE"})

    def reject(self, submission_id: str, message: str, category: str) -> None:
        if len(message) < REJECTION_MESSAGE_MIN:
            raise PlatformError(
                f"A rejection message needs {REJECTION_MESSAGE_MIN} characters or more."
            )
        body = {"action": "REJECT", "message": message, "rejection_category": category}
        self._call("POST", f"/submissions/{submission_id}/transition/", body)

    def set_up_bonuses(self, study_id: str, lines: list[tuple[str, Decimal]]) -> BonusSetUp:
        csv = "".join(f"{submission},{amount:.2f}\n" for submission, amount in lines)
        row = self._call(
            "POST", "/submissions/bonus-payments/", {"study_id": study_id, "csv_bonuses": csv}
        )
        charged = row.get("total_amount")
        amount = row.get("amount")
        return BonusSetUp(
            id=str(row["id"]),
            total_cents=round(amount) if amount is not None else 0,
            charged_cents=round(charged) if charged is not None else None,
        )

    def pay(self, payment_id: str) -> None:
        try:
            response = self._http.post(f"{self.root}/bulk-bonus-payments/{payment_id}/pay/")
        except httpx.TransportError as error:  # time-outs included
            raise AnswerLost(
                f"The pay call for bulk payment {payment_id} got no answer "
                f"({type(error).__name__}): it may have paid."
            ) from None
        if response.status_code >= 500:
            raise AnswerLost(
                f"The pay call for bulk payment {payment_id} answered {response.status_code}: "
                "it may have paid."
            )
        if not 200 <= response.status_code < 300:  # a redirect, a refusal: not taken
            raise PlatformError(
                self._scrub(_refusal("POST", "/bulk-bonus-payments/.../pay/", response))
            )

    # ---- transport -------------------------------------------------------------------

    def _pages(self, method: str, path: str) -> list[dict]:
        rows, url = [], self.root + path
        while url:
            page = self._call(method, url)
            rows.extend(page.get("results", []))
            nxt = (page.get("_links") or {}).get("next") or {}
            url = nxt.get("href") if isinstance(nxt, dict) else None
            if url and not url.startswith(self.root + "/"):
                # The token goes to Prolific's API only, never to another host.
                raise PlatformError(f"Prolific: {method} {_short(path)} paged off its host.")
        return rows

    def _call(self, method: str, path: str, body: dict | None = None) -> dict:
        for attempt in range(self.tries):
            try:
                return self._once(method, path, body)
            except _Retryable as retry:
                if attempt == self.tries - 1:
                    raise PlatformError(
                        f"Prolific: {method} {_short(path)} failed after {self.tries} tries "
                        f"({retry.why})."
                    ) from None
                self._wait(attempt, retry)
        raise AssertionError("unreachable")

    def _once(self, method: str, path: str, body: dict | None) -> dict:
        url = path if path.startswith("http") else self.root + path
        try:
            response = self._http.request(method, url, json=body)
        except httpx.TransportError as error:
            raise _Retryable(type(error).__name__) from None
        if response.status_code in _RETRY_STATUS:
            raise _Retryable(f"HTTP {response.status_code}", _retry_after(response))
        if not 200 <= response.status_code < 300:  # redirects are not followed
            raise PlatformError(self._scrub(_refusal(method, path, response)))
        if not response.content:
            return {}
        try:
            return response.json()
        except ValueError:
            raise PlatformError(f"Prolific: {method} {_short(path)} answered no JSON.") from None

    def _scrub(self, message: str) -> str:
        """A message safe to print: the token out of whatever the server echoed."""
        return message.replace(self._token, "[token]")

    def _wait(self, attempt: int, retry: _Retryable) -> None:
        wait = retry.wait if retry.wait is not None else self.backoff_s * 2**attempt
        self._sleep(min(wait, _MAX_RETRY_AFTER_S))


def create_body(draft: StudyDraft) -> dict:
    """The body of "Create a draft study" for ``draft``: both codes reviewed by hand
    (``MANUALLY_REVIEW``), so that ``prolific review`` decides every submission."""
    return {
        "name": draft.name,
        "internal_name": draft.internal_name,
        "description": draft.description,
        "external_study_url": draft.entry_url,
        "prolific_id_option": "url_parameters",
        "completion_codes": [
            {
                "code": draft.completion_code,
                "code_type": "COMPLETED",
                "actions": [{"action": "MANUALLY_REVIEW"}],
            },
            {
                "code": draft.screen_out_code,
                "code_type": "OTHER",
                "actions": [{"action": "MANUALLY_REVIEW"}],
            },
        ],
        "total_available_places": draft.places,
        "reward": draft.reward_cents,
        "estimated_completion_time": draft.minutes,
        "device_compatibility": ["desktop", "tablet", "mobile"],
        "filters": draft.filters,
    }


def _study(row: dict) -> RemoteStudy:
    currency = row.get("presentment_currency_code") or row.get("currency_code") or ""
    return RemoteStudy(
        id=str(row["id"]),
        internal_name=row.get("internal_name", ""),
        status=row.get("status", ""),
        currency=currency,
    )


def _submission(row: dict) -> RemoteSubmission:
    bonuses = tuple(round(b) for b in row.get("bonus_payments") or () if b is not None)
    return RemoteSubmission(
        id=str(row["id"]),
        status=row.get("status", ""),
        participant_id=row.get("participant_id") or row.get("participant") or "",
        bonus_cents=bonuses,
    )


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After", "")
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def _safe_root(url: str) -> bool:
    parts = urlsplit(url)
    local = parts.hostname in ("127.0.0.1", "localhost", "::1")
    return parts.scheme == "https" or (parts.scheme == "http" and local)


def _short(path: str) -> str:
    return path.split("/api/v1", 1)[-1].split("?", 1)[0]


def _refusal(method: str, path: str, response: httpx.Response) -> str:
    try:
        detail = response.json()
        detail = detail.get("error", detail) if isinstance(detail, dict) else detail
    except ValueError:
        detail = response.text
    return f"Prolific refused {method} {_short(path)} ({response.status_code}): {str(detail)[:200]}"
