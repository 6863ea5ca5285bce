"""Annotators that keep ranking through a fault, and what they saw.

``seed`` makes tasks and annotators with API tokens (the ORM, on whatever database the
caller's connection points at). An ``Annotator`` is one participant's client: its own
keep-alive HTTP connection, next task then submit, as the portal's script and the API's
clients do; an answer of 503 or a dropped connection is tried again a moment later (the
same request: a submit is idempotent), so each ranking the server acknowledged (201, or
200 for a retry of a stored one) must be stored once, and each one it did not must not be
stored at all. ``under_fault`` runs them while a fault comes and goes and keeps every
request's outcome and time (``Run``) for the tests' asserts and the benchmark's figures.
"""

from __future__ import annotations

import http.client
import json
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

RETRIED = {0, 502, 503}
"""Statuses an annotator tries again (0: the connection dropped or was refused)."""
FAULT_HEADER, KILL_AFTER_COMMIT = "X-Fault", "kill-after-commit"
"""A request with this header's value is answered, then its worker killed (tests/faults/wsgi.py)."""
PAUSE = 0.05
"""Seconds between two tries of one request (a client would wait ``Retry-After``; a
test cannot)."""


def seed(tasks: int, annotators: int, overlap: int = 2, k: int = 3) -> dict[str, str]:
    """``tasks`` tasks of ``k`` items, each ranked by ``overlap`` annotators, and
    ``annotators`` consenting annotators; {username: API token}."""
    from django.contrib.auth import get_user_model

    from annotation.accounts import tokens
    from annotation.models import Item, Occupation, Prompt, PromptType, RankingTask, TaskItem
    from annotation.models.studies import default_study
    from annotation.participants import services

    study = default_study()  # named: a study's default is a query per row
    occupation, _ = Occupation.objects.get_or_create(name="nurse", slug="nurse")
    original = Prompt.objects.create(
        occupation=occupation, prompt_type=PromptType.NEUTRAL, text="A photo of a nurse"
    )
    made = RankingTask.objects.bulk_create(
        RankingTask(occupation=occupation, overlap=overlap, study=study) for _ in range(tasks)
    )
    prompts = Prompt.objects.bulk_create(
        Prompt(occupation=occupation, prompt_type=PromptType.NEUTRAL, origin=original,
               text=f"task {task.pk} prompt {i}")
        for task in made
        for i in range(k)
    )  # fmt: skip
    items = Item.objects.bulk_create(
        Item(prompt=p, image=f"items/{p.pk}.png", image_sha256=str(p.pk), study=study)
        for p in prompts
    )
    TaskItem.objects.bulk_create(
        TaskItem(task=made[n // k], item=item) for n, item in enumerate(items)
    )
    keys = {}
    for n in range(annotators):
        user = get_user_model().objects.create(username=f"annotator{n}")
        profile = services.get_profile(user)
        profile.quota = tasks
        profile.save(update_fields=["quota"])
        services.give_consent(profile)
        keys[user.username] = tokens.issue(user)[1]
    return keys


@dataclass(frozen=True)
class Outcome:
    """One request: what, when it was sent (monotonic seconds), how long, the status."""

    kind: str  # "next" or "submit"
    sent: float
    took: float
    status: int  # 0: the connection dropped or was refused


class Annotator:
    """One participant's API client on its own keep-alive connection."""

    def __init__(self, name: str, token: str, port: int, deadline: float = 60.0):
        self.name, self.token, self.port, self.deadline = name, token, port, deadline
        self.connection: http.client.HTTPConnection | None = None
        self.outcomes: list[Outcome] = []
        self.acknowledged: list[int] = []  # the tasks whose ranking the server confirmed
        self.unanswered: list[str] = []  # requests given up (a status not retried)
        self.retry_after: str | None = None  # the last answer's Retry-After
        self.retried: list[Outcome] = []  # requests tried more than once: first try to answer

    def send(self, kind: str, path: str, body: dict | None = None, headers=None):
        """One try: (status, parsed body); 0 and None when the connection failed."""
        sent = time.monotonic()
        try:
            if self.connection is None:
                self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            self.connection.request(
                "POST",
                path,
                json.dumps(body or {}),
                {"Content-Type": "application/json", "Authorization": f"Token {self.token}",
                 **(headers or {})},
            )  # fmt: skip
            response = self.connection.getresponse()
            raw = response.read()
            self.retry_after = response.getheader("Retry-After")
            status, parsed = response.status, (json.loads(raw) if raw else None)
        except (OSError, http.client.HTTPException):
            if self.connection is not None:
                self.connection.close()
            self.connection, status, parsed = None, 0, None
        self.outcomes.append(Outcome(kind, sent, time.monotonic() - sent, status))
        return status, parsed

    def answered(self, kind: str, path: str, body: dict | None = None, headers=None):
        """The request tried until an answer that is not an outage (or the deadline)."""
        first, tries = time.monotonic(), 0
        while True:
            status, parsed = self.send(kind, path, body, headers)
            tries += 1
            if status not in RETRIED or time.monotonic() > first + self.deadline:
                if tries > 1:
                    self.retried.append(Outcome(kind, first, time.monotonic() - first, status))
                return status, parsed
            headers = None  # a fault header is for the first try only
            time.sleep(PAUSE)

    def next_task(self) -> dict | None:
        status, task = self.answered("next", "/api/tasks/next/")
        if status != 200:
            if status != 204:
                self.unanswered.append(f"{self.name} next: {status}")
            return None
        return task

    def submit(self, task: dict, headers=None) -> int:
        """Rank the task (its cards reversed) until answered; the final status."""
        order = [card["id"] for card in task["items"]][::-1]
        path = f"/api/tasks/{task['id']}/ranking/"
        status, stored = self.answered("submit", path, {"order": order}, headers)
        if status in (200, 201):
            assert stored["order"] == order, (self.name, task["id"], stored)
            self.acknowledged.append(task["id"])
        else:
            self.unanswered.append(f"{self.name} submit {task['id']}: {status}")
        return status

    def loop(self, stop: threading.Event) -> None:
        while not stop.is_set():
            task = self.next_task()
            if task is None:
                return
            self.submit(task)

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()


@dataclass
class Run:
    """What the annotators saw: the fault's window (monotonic seconds) and every request."""

    annotators: list[Annotator]
    fault_at: float = 0.0
    back_at: float = 0.0
    extra: dict = field(default_factory=dict)

    @property
    def outcomes(self) -> list[Outcome]:
        return [o for a in self.annotators for o in a.outcomes]

    def acknowledged(self) -> set[tuple[str, int]]:
        return {(a.name, task) for a in self.annotators for task in a.acknowledged}

    def statuses(self) -> Counter:
        """Answers that were not a success, by status (0: a dropped connection)."""
        return Counter(o.status for o in self.outcomes if o.status not in (200, 201, 204))

    def submits(self, during: bool) -> list[Outcome]:
        """Submits sent while the fault lasted (``during``; it lasts until ``back_at`` is
        set), or all of them."""
        end = self.back_at or float("inf")
        return [
            o
            for o in self.outcomes
            if o.kind == "submit" and (not during or self.fault_at <= o.sent <= end)
        ]

    def retried(self) -> list[Outcome]:
        """Requests tried more than once, each from its first try to its answer."""
        return [o for a in self.annotators for o in a.retried]

    def stored_during(self) -> int:
        return sum(o.status in (200, 201) for o in self.submits(during=True))

    def recovery(self) -> float | None:
        """Seconds from the service's return to the first submit stored after it."""
        done = [o.sent + o.took for o in self.submits(during=False) if o.status in (200, 201)]
        after = [t for t in done if t >= self.back_at]
        return min(after) - self.back_at if after else None

    def latency(self, during: bool) -> str:
        """p50 / p95 of the submits (ms), during the fault or overall."""
        took = [o.took * 1000 for o in self.submits(during) if o.status in (200, 201)]
        if len(took) < 2:
            return "n/a"
        q = statistics.quantiles(took, n=20)
        return f"{statistics.median(took):.0f} / {q[18]:.0f} ms"


def under_fault(
    port: int,
    keys: dict[str, str],
    down: Callable[[], None],
    up: Callable[[], None],
    held: Callable[[Run], bool],
    hold: float = 10.0,
    after: int = 8,
) -> Run:
    """The annotators loop while ``down()`` breaks a service; it stays broken until
    ``held(run)`` (at most ``hold`` seconds), then ``up()`` mends it; they stop once
    ``after`` rankings were stored after that (at most 30 s)."""
    annotators = [Annotator(name, key, port) for name, key in keys.items()]
    run, stop = Run(annotators), threading.Event()
    threads = [threading.Thread(target=a.loop, args=(stop,), daemon=True) for a in annotators]
    for thread in threads:
        thread.start()
    try:

        def until(predicate: Callable[[], bool], timeout: float) -> None:
            """Wait for ``predicate`` (at most ``timeout`` s), or for every annotator to stop
            (out of tasks, or given up)."""
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and any(t.is_alive() for t in threads):
                if predicate():
                    return
                time.sleep(0.02)

        until(lambda: len(run.acknowledged()) >= len(annotators), 30)  # all under way
        run.fault_at = time.monotonic()
        down()
        until(lambda: held(run), hold)
        up()
        run.back_at = time.monotonic()
        until(lambda: _stored_since(run) >= after, 30)
    finally:
        stop.set()
        for thread in threads:
            thread.join(60)
        for annotator in annotators:
            annotator.close()
    return run


def _stored_since(run: Run) -> int:
    return sum(o.status in (200, 201) and o.sent >= run.back_at for o in run.submits(during=False))
