"""A local HTTP server that speaks the OpenAI chat-completions protocol, for tests.

It also answers ``/v1/images/generations`` (``fake_image``), for the optional image
generator of validation studies. It stands in for a paid API (OpenAI, or a vLLM /
Ollama / llama.cpp server that cannot run here): the paraphrase client talks real HTTP to it on
127.0.0.1. It is not a language model: its "paraphrases" are fixed rewrites of
each prompt (a new lead-in before the prompt's body), enough to exercise the
client and the quality filter. Other clients (the prompt optimiser) pass a
``responder`` that turns a request body into the message content. A test
scripts failures (``Reply``: a status with headers, a delay, a raw body, a
given message content) that are used up one per request, then it answers
normally; every request is recorded.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LEADS = (
    "A photo of",
    "Create a picture of",
    "An illustration of",
    "Produce an image showing",
    "A portrait of",
    "Make a photograph of",
)


@dataclass
class Reply:
    """One scripted answer: ``status`` with ``headers``; ``raw`` body or ``content``; ``delay``."""

    status: int = 200
    headers: dict = field(default_factory=dict)
    delay_s: float = 0.0
    raw: str | None = None
    content: str | None = None
    finish_reason: str = "stop"


@dataclass
class Seen:
    """A request as the server received it."""

    at: float
    path: str
    headers: dict
    body: dict | None


def paraphrases(text: str, k: int) -> list[str]:
    """``k`` rewrites of ``text``: its body after the lead-ins in ``LEADS``."""
    body = re.sub(r"^(generate|create) an? (image|picture) of\s+", "", text, flags=re.IGNORECASE)
    out = []
    for j in range(k):
        lead = LEADS[j % len(LEADS)]
        out.append(f"{lead} {body}" + (f" (take {j // len(LEADS) + 1})" if j >= len(LEADS) else ""))
    return out


def paraphrase_content(body: dict) -> str:
    """The paraphrase client's answer: ``k`` rewrites of every prompt in the request."""
    messages = body.get("messages") or []
    system = next((m["content"] for m in messages if m.get("role") == "system"), "")
    user = next((m["content"] for m in messages if m.get("role") == "user"), "{}")
    k = int(m[1]) if (m := re.search(r"write (\d+)", system)) else 3
    prompts = json.loads(user)["prompts"]
    return json.dumps({"paraphrases": {p["id"]: paraphrases(p["text"], k) for p in prompts}})


def fake_image(body: dict) -> bytes:
    """The images endpoint's answer: a 16x16 PNG whose colour is a hash of the prompt and
    seed (not a picture of anything: the client and the import are what is tested)."""
    import hashlib
    import io

    from PIL import Image

    digest = hashlib.sha256(f"{body.get('prompt')}|{body.get('seed')}".encode()).digest()
    buffer = io.BytesIO()
    Image.new("RGB", (16, 16), tuple(digest[:3])).save(buffer, format="PNG")
    return buffer.getvalue()


class ChatServer:
    """The server, run in a thread on ``127.0.0.1`` with a free port; use it as a context."""

    def __init__(
        self,
        api_key: str | None = "sk-test",
        model: str = "test-model",
        responder: Callable[[dict], str] | None = None,
    ) -> None:
        self.api_key = api_key
        self.model = model
        self.responder = responder or paraphrase_content
        self.script: deque[Reply] = deque()
        self.seen: list[Seen] = []
        self.usage_sent: list[dict] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """The ``/v1`` base URL clients are configured with."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def answer(self, body: dict, content: str | None = None) -> tuple[str, dict]:
        """The message content (``content`` or the responder's) and the usage it carries."""
        messages = body.get("messages") or []
        if content is None:
            content = self.responder(body)
        usage = {
            "prompt_tokens": len(json.dumps(messages)) // 4,
            "completion_tokens": len(content) // 4,
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        return content, usage

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def _send(self, status: int, payload: str, headers: dict | None = None) -> None:
                data = payload.encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                with server._lock:
                    server.seen.append(
                        Seen(time.monotonic(), self.path, dict(self.headers.items()), body)
                    )
                    reply = server.script.popleft() if server.script else Reply()
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if self.path == "/v1/images/generations" and reply.status == 200:
                    if server.api_key and self.headers.get("Authorization") != (
                        f"Bearer {server.api_key}"
                    ):
                        error = {"message": "Incorrect API key provided"}
                        return self._send(401, json.dumps({"error": error}))
                    if reply.raw is not None:
                        return self._send(200, reply.raw, reply.headers)
                    image = base64.b64encode(fake_image(body or {})).decode()
                    return self._send(200, json.dumps({"data": [{"b64_json": image}]}))
                if self.path == "/v1/images/generations":
                    error = {"error": {"message": f"scripted HTTP {reply.status}"}}
                    return self._send(reply.status, json.dumps(error), reply.headers)
                if self.path != "/v1/chat/completions":
                    return self._send(404, json.dumps({"error": {"message": "no such route"}}))
                if server.api_key and self.headers.get("Authorization") != (
                    f"Bearer {server.api_key}"
                ):
                    error = {"message": "Incorrect API key provided", "type": "invalid_api_key"}
                    return self._send(401, json.dumps({"error": error}))
                if reply.status != 200:
                    error = {"error": {"message": f"scripted HTTP {reply.status}"}}
                    return self._send(reply.status, json.dumps(error), reply.headers)
                if reply.raw is not None:
                    return self._send(200, reply.raw, reply.headers)
                content, usage = server.answer(body or {}, reply.content)
                with server._lock:
                    server.usage_sent.append(usage)
                completion = {
                    "id": f"chatcmpl-{len(server.seen)}",
                    "object": "chat.completion",
                    "model": (body or {}).get("model", server.model),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": content},
                            "finish_reason": reply.finish_reason,
                        }
                    ],
                    "usage": usage,
                }
                return self._send(200, json.dumps(completion), reply.headers)

        return Handler
