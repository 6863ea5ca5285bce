"""A fake Prolific API server, for what cannot exist here (Prolific's servers).

A real HTTP server on 127.0.0.1 that answers the calls ``annotation.crowd.prolific`` makes,
in the shapes docs.prolific.com's API reference documents (read 2026-12): ``Token``
authentication (401 without), "Create a draft study" (``internal_name``, typed
``completion_codes``, ``reward`` in cents), "List studies" and "List submissions" as pages
of ``results`` with ``_links.next.href``, "Transition a study", "Update a study"
(``filters``), "List filters" (``filter_id``, ``type``, ``choices``), "Approve or reject a
submission" (only from ``AWAITING REVIEW``; ``REJECT`` needs a ``rejection_category`` and a
message of 100 characters or more; a repeat is ignored, as documented), "Set up bonuses"
(``csv_bonuses`` of ``<submission_id>,<amount>`` lines in the study's currency; a
submission of another study is a 400; answers ``id``, ``amount`` and ``total_amount`` in
cents) and "Pay bonuses" (NOT idempotent: each call pays every line again, as documented),
each paid bonus then listed in the submission's ``bonus_payments`` (cents).

It can fail as the real one can: ``fail(method, path_pattern, kind, times)`` with kind
``timeout`` (no answer before the client gives up; nothing done), ``429`` (with
``Retry-After``), ``500`` (nothing done), or ``lose_answer`` (the call takes effect, then
the connection drops before any answer). ``calls`` records every request (method, path,
body) for the tests to count; it never records the Authorization header.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
import time
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CURRENCY = "GBP"
MOVES = {"PUBLISH": "ACTIVE", "PAUSE": "PAUSED", "START": "ACTIVE", "STOP": "COMPLETED"}
PAGE = 2  # small pages, so that the client's paging is exercised
FILTERS = [
    {"filter_id": "age", "type": "range", "title": "Age"},
    {
        "filter_id": "fluent-languages",
        "type": "select",
        "choices": {"0": "English", "1": "Dutch", "2": "Arabic", "3": "French"},
    },
    {
        "filter_id": "current-country-of-residence",
        "type": "select",
        "choices": {"0": "Netherlands", "1": "United Kingdom", "2": "Egypt"},
    },
    {"filter_id": "first-language", "type": "select", "choices": {"0": "English", "1": "Dutch"}},
]
REJECTION_CATEGORIES = {
    "TOO_QUICKLY", "TOO_SLOWLY", "FAILED_INSTRUCTIONS", "INCOMP_LONGITUDINAL", "FAILED_CHECK",
    "LOW_EFFORT", "MALINGERING", "NO_CODE", "BAD_CODE", "NO_DATA", "UNSUPP_DEVICE", "OTHER",
}  # fmt: skip


class FakeProlific:
    def __init__(self, token: str, client_timeout: float = 0.5):
        self.token, self.client_timeout = token, client_timeout
        self.studies: dict[str, dict] = {}
        self.submissions: dict[str, dict] = {}
        self.bulk: dict[str, dict] = {}
        self.calls: list[tuple[str, str, dict | None]] = []
        self.faults: list[dict] = []
        self.bonus_markup = 0  # cents added to "Set up bonuses"'s amount: a wrong answer
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                fake._serve(self, "GET")

            def do_POST(self):
                fake._serve(self, "POST")

            def do_PATCH(self):
                fake._serve(self, "PATCH")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # ---- for the tests --------------------------------------------------------------

    def fail(self, method: str, pattern: str, kind: str, times: int = 1) -> None:
        self.faults.append({"method": method, "re": re.compile(pattern), "kind": kind, "n": times})

    def add_submission(self, study_id: str, submission_id: str, status="AWAITING REVIEW"):
        self.submissions[submission_id] = {
            "id": submission_id,
            "study_id": study_id,
            "participant_id": secrets.token_hex(12),
            "status": status,
            "bonus_payments": [],
            "started_at": "2026-12-07T10:00:00Z",
        }

    def count(self, method: str, pattern: str) -> int:
        return sum(1 for m, p, _ in self.calls if m == method and re.search(pattern, p))

    # ---- the server -----------------------------------------------------------------

    def _serve(self, h: BaseHTTPRequestHandler, method: str) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        path = h.path.split("?", 1)[0]
        query = h.path.split("?", 1)[1] if "?" in h.path else ""
        with self.lock:
            self.calls.append((method, path, body))
            fault = self._fault(method, path)
        if h.headers.get("Authorization") != f"Token {self.token}":
            return self._answer(h, 401, {"error": {"detail": "Invalid token."}})
        if fault == "timeout":
            time.sleep(self.client_timeout + 0.5)
            return self._answer(h, 504, {"error": "late"})
        if fault == "429":
            return self._answer(h, 429, {"error": "slow down"}, {"Retry-After": "0.01"})
        if fault == "500":
            return self._answer(h, 500, {"error": "server error"})
        with self.lock:
            status, answer = self._route(method, path, query, body or {})
        if fault == "lose_answer":
            h.close_connection = True  # it took effect; the answer never comes
            return
        self._answer(h, status, answer)

    def _fault(self, method: str, path: str) -> str | None:
        for rule in self.faults:
            if rule["n"] > 0 and rule["method"] == method and rule["re"].search(path):
                rule["n"] -= 1
                return rule["kind"]
        return None

    @staticmethod
    def _answer(h, status: int, body, headers: dict | None = None) -> None:
        data = json.dumps(body).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            h.send_header(key, value)
        h.end_headers()
        h.wfile.write(data)

    def _page(self, rows: list[dict], path: str, query: str) -> dict:
        start = int(query.split("offset=", 1)[1]) if "offset=" in query else 0
        page = {"results": rows[start : start + PAGE], "_links": {"next": {"href": None}}}
        if start + PAGE < len(rows):
            page["_links"]["next"]["href"] = f"{self.url}{path}?offset={start + PAGE}"
        return page

    def _route(self, method: str, path: str, query: str, body: dict):  # noqa: C901
        parts = [p for p in path.split("/") if p][2:]  # after api/v1
        match method, parts:
            case "GET", ["filters"]:
                return 200, {"results": FILTERS}
            case "GET", ["studies"]:
                return 200, self._page(list(self.studies.values()), path, query)
            case "POST", ["studies"]:
                missing = [
                    k
                    for k in ("name", "external_study_url", "completion_codes", "reward",
                              "total_available_places", "estimated_completion_time")
                    if k not in body
                ]  # fmt: skip
                if missing:
                    return 400, {"error": {k: ["This field is required."] for k in missing}}
                study = {**body, "id": secrets.token_hex(12), "status": "UNPUBLISHED"}
                study["currency_code"] = CURRENCY
                self.studies[study["id"]] = study
                return 201, study
            case "GET", ["studies", sid]:
                return (200, self.studies[sid]) if sid in self.studies else (404, {})
            case "PATCH", ["studies", sid]:
                self.studies[sid].update(body)
                return 200, self.studies[sid]
            case "POST", ["studies", sid, "transition"]:
                moves = {
                    "PUBLISH": "ACTIVE",
                    "PAUSE": "PAUSED",
                    "START": "ACTIVE",
                    "STOP": "COMPLETED",
                }
                if body.get("action") not in moves:
                    return 400, {"error": "unknown action"}
                self.studies[sid]["status"] = MOVES[body["action"]]
                return 200, self.studies[sid]
            case "GET", ["studies", sid, "submissions"]:
                rows = [s for s in self.submissions.values() if s["study_id"] == sid]
                return 200, self._page(rows, path, query)
            case "GET", ["submissions", sub]:
                found = self.submissions.get(sub)
                return (
                    (200, {**found, "participant": found["participant_id"]}) if found else (404, {})
                )
            case "POST", ["submissions", "bonus-payments"]:
                return self._set_up_bonuses(body)
            case "POST", ["submissions", sub, "transition"]:
                return self._transition(sub, body)
            case "POST", ["bulk-bonus-payments", bid, "pay"]:
                if bid not in self.bulk:
                    return 404, {}
                for sub, amount in self.bulk[bid]["lines"]:  # every call pays again
                    self.submissions[sub]["bonus_payments"].append(int(amount * 100))
                self.bulk[bid]["paid"] += 1
                return 202, {}
        return 404, {"error": f"no route {method} {path}"}

    def _transition(self, sub: str, body: dict):
        found = self.submissions.get(sub)
        if found is None:
            return 404, {}
        action, target = body.get("action"), {"APPROVE": "APPROVED", "REJECT": "REJECTED"}
        if action not in target:
            return 400, {"error": "unknown action"}
        if found["status"] == target[action]:
            return 200, found  # documented idempotent: the repeat is ignored
        if found["status"] != "AWAITING REVIEW":
            return 400, {"error": f"cannot {action} a submission {found['status']}"}
        if action == "REJECT" and (
            len(body.get("message") or "") < 100
            or body.get("rejection_category") not in REJECTION_CATEGORIES
        ):
            return 400, {"error": "a rejection needs a category and a message of 100+ chars"}
        found["status"] = target[action]
        return 200, found

    def _set_up_bonuses(self, body: dict):
        study = body.get("study_id")
        lines = []
        for row in (body.get("csv_bonuses") or "").strip().splitlines():
            sub, amount = row.split(",")
            if self.submissions.get(sub, {}).get("study_id") != study:
                return 400, {"error": f"{sub} did not take part in study {study}"}
            lines.append((sub, Decimal(amount)))
        bid = secrets.token_hex(12)
        self.bulk[bid] = {"lines": lines, "paid": 0}
        amount = sum(a for _, a in lines) * 100 + self.bonus_markup
        fees = float(amount) * 0.33
        return 201, {
            "id": bid,
            "study": study,
            "amount": float(amount),
            "fees": fees,
            "total_amount": float(amount) + fees,
        }
