"""A client for OpenAI-compatible chat completions (OpenAI, vLLM, Ollama, llama.cpp).

Shared by the paraphrase backend and the prompt optimiser: each builds its own
messages and parses its own answer; this client sends them and owns what is
common. Failures that may pass (timeouts, connection errors, HTTP
408/409/429/5xx, an answer the caller's parser refuses with ``MalformedAnswer``)
are retried up to ``max_retries`` times, waiting ``backoff_s * 2**attempt`` (at
most ``backoff_max_s``) or what the server's ``Retry-After`` says; other HTTP
errors (a bad key, an unknown model) stop at once with the server's message.

Cost: token usage is read from each answer (estimated at 3 characters a token
when the server gives none; a request that timed out is charged its estimated
prompt, since the server may have billed it) and priced per 1,000 tokens. With
``max_cost_usd``, a request is only sent if the worst case (its estimated
prompt plus ``max_tokens`` of completion) fits in what is left of the budget;
otherwise ``ChatBudgetExceeded`` is raised before anything is spent. A ``ledger``
(``SpendLedger``) does the same for a budget shared beyond this client (the Django
side's is a day's, across requests and processes: ``training.llm_budget``): it
reserves each request's worst case before it is sent and is told what it cost after.
"""

from __future__ import annotations

import email.utils
import json
import math
import re
import time
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Protocol, TypeVar

import httpx

from training.ml.errors import MLError

T = TypeVar("T")
_RETRY_STATUS = frozenset({408, 409, 429})
CHARS_PER_TOKEN = 3


class ChatError(MLError, RuntimeError):
    """The chat server gave no usable answer; the message says why."""


class ChatBudgetExceeded(ChatError):
    """The next request could cost more than what is left of ``max_cost_usd``."""


class SpendLedger(Protocol):
    """A budget shared beyond one client: ``reserve`` raises ``ChatBudgetExceeded`` when
    ``worst_usd`` does not fit (else returns a ticket), ``settle`` books what the request
    cost against that ticket."""

    def reserve(self, worst_usd: float) -> object: ...

    def settle(self, ticket: object, cost_usd: float) -> None: ...


class MalformedAnswer(MLError, ValueError):
    """A chat answer that does not hold what was asked for (worth asking again)."""


def loads_lenient(content: str):
    """The JSON in a chat answer, allowing code fences and chatter around it."""
    text = content.strip()
    fenced = re.match(r"^```[a-zA-Z]*\s*(.*?)\s*```$", text, re.DOTALL)
    if fenced:
        text = fenced[1]
    try:
        return json.loads(text)
    except ValueError:
        pass
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    end = max(text.rfind("}"), text.rfind("]"))
    if starts and end > min(starts):
        try:
            return json.loads(text[min(starts) : end + 1])
        except ValueError:
            pass
    raise MalformedAnswer(f"the answer is not JSON: {content[:120]!r}")


def retry_after_seconds(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds a ``Retry-After`` header asks to wait (delta-seconds or HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


class RateLimiter:
    """At most ``limit`` calls of ``wait`` in any ``window_s`` seconds; it sleeps to keep it."""

    def __init__(
        self,
        limit: int,
        window_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if limit < 1 or window_s <= 0:
            raise ValueError("a rate limit needs limit >= 1 and window_s > 0")
        self.limit, self.window_s = limit, window_s
        self._clock, self._sleep = clock, sleep
        self._sent: deque[float] = deque()

    def wait(self) -> None:
        """Return when one more call fits in the window, and count it."""
        while True:
            now = self._clock()
            while self._sent and self._sent[0] <= now - self.window_s:
                self._sent.popleft()
            if len(self._sent) < self.limit:
                self._sent.append(now)
                return
            self._sleep(self._sent[0] + self.window_s - now)


class ChatClient:
    """Requests to ``{base_url}/chat/completions`` with retries, a rate limit and a budget.

    ``requests_per_minute`` limits the requests sent (over ``rate_window_s``,
    60 s unless told); prices are USD per 1,000 tokens. ``usage`` holds running
    totals (``requests``, ``prompt_tokens``, ``completion_tokens``, ``cost_usd``).
    """

    def __init__(
        self,
        base_url: str = "https://api.openai.com/v1",
        model: str = "gpt-4o-mini",
        api_key: str = "",
        *,
        timeout: float = 60.0,
        max_retries: int = 4,
        backoff_s: float = 1.0,
        backoff_max_s: float = 30.0,
        max_retry_after_s: float = 120.0,
        temperature: float = 0.7,
        max_tokens: int = 4096,
        requests_per_minute: int | None = None,
        rate_window_s: float = 60.0,
        price_prompt_per_1k: float | None = None,
        price_completion_per_1k: float | None = None,
        max_cost_usd: float | None = None,
        ledger: SpendLedger | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not re.match(r"^https?://", base_url or ""):
            raise ValueError(f"base_url must start with http:// or https://, not {base_url!r}")
        if not model:
            raise ValueError("a chat client needs a model name")
        if timeout <= 0 or max_retries < 0 or max_tokens < 1:
            raise ValueError("timeout and max_tokens must be positive, max_retries >= 0")
        prices = (price_prompt_per_1k, price_completion_per_1k)
        if (prices[0] is None) != (prices[1] is None):
            raise ValueError("give both prices per 1k tokens (prompt and completion), or neither")
        if max_cost_usd is not None and prices[0] is None:
            raise ValueError("max_cost_usd needs price_prompt_per_1k and price_completion_per_1k")
        if ledger is not None and prices[0] is None:
            raise ValueError("a ledger needs price_prompt_per_1k and price_completion_per_1k")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.timeout, self.max_retries = timeout, max_retries
        self.backoff_s, self.backoff_max_s = backoff_s, backoff_max_s
        self.max_retry_after_s = max_retry_after_s
        self.temperature, self.max_tokens = temperature, max_tokens
        self.prices = prices if prices[0] is not None else None
        self.max_cost_usd = max_cost_usd
        self.ledger = ledger
        self._sleep = sleep
        self._limiter = (
            RateLimiter(requests_per_minute, rate_window_s, clock, sleep)
            if requests_per_minute
            else None
        )
        self._headers = {"Content-Type": "application/json", "User-Agent": "stereorank"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.Client(timeout=timeout)
        self.usage = {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0}

    def __repr__(self) -> str:
        return f"ChatClient(url={self.url!r}, model={self.model!r})"

    def close(self) -> None:
        """Close the HTTP connections."""
        self._client.close()

    def complete(
        self,
        messages: list[dict],
        parse: Callable[[str], T],
        *,
        wanted_tokens: int | None = None,
        seed: int | None = None,
    ) -> T:
        """``parse`` of the answer's text; ``wanted_tokens`` caps ``max_tokens`` for this request.

        ``parse`` raises ``MalformedAnswer`` for an answer worth asking again for.
        """
        estimate = math.ceil(len(json.dumps(messages)) / CHARS_PER_TOKEN)
        max_tokens = min(self.max_tokens, wanted_tokens or self.max_tokens)
        body = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "max_tokens": max_tokens,
        }
        if seed is not None:
            body["seed"] = seed
        problem = ""
        for attempt in range(self.max_retries + 1):
            self._check_budget(estimate, max_tokens)
            if self._limiter is not None:
                self._limiter.wait()
            ticket = self._reserve(estimate, max_tokens)
            spent_before = self.usage["cost_usd"]
            self.usage["requests"] += 1
            response = None
            try:
                response = self._client.post(self.url, json=body, headers=self._headers)
            except httpx.TimeoutException:
                problem = f"no answer within {self.timeout:g} s"
                self._account(estimate, 0)
            except httpx.TransportError as exc:
                problem = f"cannot reach {self.url}: {exc}"
            else:
                try:
                    return self._answer(response, estimate, parse)
                except MalformedAnswer as exc:
                    problem = f"malformed answer: {exc}"
                except _Retryable as exc:
                    problem = str(exc)
            finally:
                if self.ledger is not None:
                    self.ledger.settle(ticket, self.usage["cost_usd"] - spent_before)
            if attempt < self.max_retries:
                self._sleep(self._delay(attempt, response))
        raise ChatError(f"{self.url} failed after {self.max_retries + 1} attempts; last: {problem}")

    def _cost(self, prompt_tokens: float, completion_tokens: float) -> float:
        if self.prices is None:
            return 0.0
        return (prompt_tokens * self.prices[0] + completion_tokens * self.prices[1]) / 1000

    def _account(self, prompt_tokens: int, completion_tokens: int) -> None:
        self.usage["prompt_tokens"] += prompt_tokens
        self.usage["completion_tokens"] += completion_tokens
        self.usage["cost_usd"] += self._cost(prompt_tokens, completion_tokens)

    def _reserve(self, prompt_tokens: int, max_tokens: int) -> object:
        """The shared ledger's ticket for this request's worst case (None without one)."""
        if self.ledger is None:
            return None
        return self.ledger.reserve(self._cost(prompt_tokens, max_tokens))

    def _check_budget(self, prompt_tokens: int, max_tokens: int) -> None:
        if self.max_cost_usd is None:
            return
        worst = self._cost(prompt_tokens, max_tokens)
        spent = self.usage["cost_usd"]
        if spent + worst > self.max_cost_usd:
            raise ChatBudgetExceeded(
                f"cost budget ${self.max_cost_usd:.4f} would be exceeded: ${spent:.4f} spent, "
                f"the next request may cost up to ${worst:.4f}"
            )

    def _delay(self, attempt: int, response: httpx.Response | None) -> float:
        if response is not None:
            asked = retry_after_seconds(response.headers.get("Retry-After"))
            if asked is not None:
                return min(asked, self.max_retry_after_s)
        return min(self.backoff_max_s, self.backoff_s * 2**attempt)

    def _answer(self, response: httpx.Response, estimate: int, parse: Callable[[str], T]) -> T:
        status = response.status_code
        if status in _RETRY_STATUS or status >= 500:
            raise _Retryable(f"HTTP {status}: {_server_message(response)}")
        if status >= 400:
            raise ChatError(f"{self.url} answered HTTP {status}: {_server_message(response)}")
        try:
            data = response.json()
            choice = data["choices"][0]
            content = choice["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise MalformedAnswer(f"not a chat completion ({exc!r})") from None
        usage = data.get("usage") or {}
        prompt = usage.get("prompt_tokens")
        completion = usage.get("completion_tokens")
        self._account(
            int(prompt) if isinstance(prompt, int) else estimate,
            int(completion)
            if isinstance(completion, int)
            else math.ceil(len(content or "") / CHARS_PER_TOKEN),
        )
        if not isinstance(content, str):
            raise MalformedAnswer("the message has no text content")
        try:
            return parse(content)
        except MalformedAnswer as exc:
            if choice.get("finish_reason") == "length":
                raise ChatError(
                    f"the answer was cut at max_tokens ({exc}); ask for less or raise max_tokens"
                ) from None
            raise


class _Retryable(Exception):
    """An HTTP status worth asking again for."""


def _server_message(response: httpx.Response) -> str:
    try:
        error = response.json().get("error")
        message = error.get("message") if isinstance(error, dict) else error
    except (ValueError, AttributeError):
        message = None
    return str(message or response.text or response.reason_phrase)[:200]
