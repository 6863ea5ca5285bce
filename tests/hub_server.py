"""A fake Hugging Face Hub, for what cannot exist here (the Hub's servers).

A real HTTP server on 127.0.0.1 answering the calls ``HfApi.create_repo`` and
``HfApi.upload_folder`` make (``huggingface_hub`` 2.4, read in .venv's
``huggingface_hub/hf_api.py`` and ``_commit_api.py``), in the shapes that code reads:

- ``POST /api/repos/create`` with ``{"name", "organization", "type", "visibility"}``:
  ``{"url": ...}``; 409 when the repository exists (as the Hub answers it);
- ``POST /api/validate-yaml`` (a README.md's metadata): ``{"errors": [], "warnings": []}``;
- ``POST /api/{type}s/{owner}/{name}/preupload/{revision}`` with ``{"files": [{"path",
  "sample", "size"}]}``: each file's ``uploadMode`` (``regular`` here: its content then
  travels base64 in the commit, no LFS or Xet upload), ``shouldIgnore`` and ``oid``;
- ``POST /api/{type}s/{owner}/{name}/commit/{revision}``, an NDJSON body (a ``header``
  line, then one ``file`` line per file: ``{"path", "content", "encoding": "base64"}``):
  ``{"commitUrl", "commitOid"}``.

Every call needs ``Authorization: Bearer <token>`` (401 otherwise). ``calls`` records each
request's method and path (never its headers); ``repos`` holds each repository's type,
visibility and committed files (path -> bytes). Any other path is a 404, recorded.
"""

from __future__ import annotations

import base64
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REPO_PATH = re.compile(r"/api/(?P<type>\w+)s/(?P<repo>[^/]+/[^/]+)/(?P<op>preupload|commit)/")


class FakeHub:
    def __init__(self, token: str):
        self.token = token
        self.calls: list[tuple[str, str]] = []
        self.repos: dict[str, dict] = {}
        self.unknown: list[str] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> FakeHub:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, method: str, path: str, headers, body: bytes) -> tuple[int, dict]:
        self.calls.append((method, path))
        if headers.get("Authorization") != f"Bearer {self.token}":
            return 401, {"error": "Invalid credentials in Authorization header"}
        if (method, path) == ("POST", "/api/repos/create"):
            payload = json.loads(body)
            repo = f"{payload['organization']}/{payload['name']}"
            if repo in self.repos:
                return 409, {"error": "You already created this dataset repo", "url": repo}
            self.repos[repo] = {
                "type": payload.get("type"),
                "visibility": payload.get("visibility"),
                "files": {},
            }
            return 200, {"url": f"{self.url}/datasets/{repo}", "name": repo}
        if (method, path) == ("POST", "/api/validate-yaml"):
            return 200, {"errors": [], "warnings": []}
        found = REPO_PATH.match(path)
        repo = found and self.repos.get(found["repo"])
        if method != "POST" or not repo or repo["type"] != found["type"]:
            self.unknown.append(f"{method} {path}")
            return 404, {"error": "Repository not found"}
        if found["op"] == "preupload":
            files = json.loads(body)["files"]
            modes = [
                {"path": f["path"], "uploadMode": "regular", "shouldIgnore": False, "oid": None}
                for f in files
            ]
            return 200, {"files": modes, "commitOid": "0" * 40}
        lines = [json.loads(line) for line in body.splitlines() if line.strip()]
        assert lines[0]["key"] == "header", lines[0]
        for line in lines[1:]:
            value = line["value"]
            if line["key"] != "file" or value.get("encoding") != "base64":
                return 400, {"error": f"not a regular file line: {line['key']}"}
            repo["files"][value["path"]] = base64.b64decode(value["content"])
        oid = f"{len(self.calls):040x}"
        return 200, {"commitUrl": f"{self.url}/datasets/{found['repo']}/commit/{oid}",
                     "commitOid": oid, "success": True}  # fmt: skip

    def _handler(self):
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                status, payload = hub.answer(self.command, self.path, self.headers, body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = _any

            def log_message(self, *args):  # quiet
                pass

        return Handler
