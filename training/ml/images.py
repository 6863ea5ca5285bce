"""A client for OpenAI-compatible image generation (``POST {base_url}/images/generations``):
the optional generator of a validation study's images (``training.image_generation``).

``ImageGenerator`` is the interface (a name, the settings to record with each image,
``generate(prompt, seed) -> bytes``); ``OpenAIImages`` calls the endpoint with
``response_format: b64_json`` and the seed (which servers honour as they can), and
retries timeouts, connection errors and HTTP 408/409/429/5xx up to ``max_retries``
times with exponential back-off; any other HTTP error stops at once with the server's
message (``ImageGenerationError``). An answer that is not one base64 image is refused.
"""

from __future__ import annotations

import base64
import binascii
import time
from typing import Protocol

import httpx

from training.ml.errors import MLError

_RETRY_STATUS = frozenset({408, 409, 429})


class ImageGenerationError(MLError, RuntimeError):
    """The images endpoint gave no usable image; the message says why."""


class ImageGenerator(Protocol):
    """Anything that turns a prompt and a seed into the bytes of one image."""

    name: str

    def settings(self) -> dict:
        """What to record with each image (model, size, endpoint; never the key)."""

    def generate(self, prompt: str, seed: int) -> bytes:
        """One image of ``prompt`` with ``seed``."""


class OpenAIImages:
    """An OpenAI-compatible images endpoint (OpenAI, or a local server that speaks it)."""

    name = "openai-compatible"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str = "",
        size: str = "1024x1024",
        timeout: float = 120.0,
        max_retries: int = 3,
        backoff_s: float = 1.0,
    ) -> None:
        if not base_url:
            raise ImageGenerationError("no images endpoint: set its base URL")
        self.base_url, self.model, self.size = base_url.rstrip("/"), model, size
        self.max_retries, self.backoff_s = max_retries, backoff_s
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(timeout=timeout, headers=headers)

    def close(self) -> None:
        self._http.close()

    def settings(self) -> dict:
        return {"model": self.model, "size": self.size, "base_url": self.base_url}

    def _post(self, body: dict) -> dict:
        url = f"{self.base_url}/images/generations"
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            try:
                response = self._http.post(url, json=body)
            except (httpx.TimeoutException, httpx.TransportError) as error:
                if last:
                    raise ImageGenerationError(f"{url}: {error}") from None
            else:
                status = response.status_code
                if status == 200:
                    try:
                        return response.json()
                    except ValueError:
                        raise ImageGenerationError(f"{url}: the answer is not JSON") from None
                if status not in _RETRY_STATUS and status < 500 or last:
                    try:
                        message = response.json()["error"]["message"]
                    except (ValueError, KeyError, TypeError):
                        message = response.text[:200]
                    raise ImageGenerationError(f"{url}: HTTP {status}: {message}")
            time.sleep(self.backoff_s * 2**attempt)
        raise AssertionError("unreachable")

    def generate(self, prompt: str, seed: int) -> bytes:
        body = {
            "model": self.model,
            "prompt": prompt,
            "n": 1,
            "size": self.size,
            "response_format": "b64_json",
            "seed": seed,
        }
        answer = self._post(body)
        try:
            (image,) = answer["data"]
            return base64.b64decode(image["b64_json"], validate=True)
        except (KeyError, TypeError, ValueError, binascii.Error):
            raise ImageGenerationError("the answer holds no single base64 image") from None
