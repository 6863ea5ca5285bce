"""An S3-compatible server on this machine for the fleet tests: moto's server mode.

No S3-compatible server proper (MinIO, SeaweedFS, Garage) is packaged for PyPI or
Debian, so the tests run moto's standalone server (``moto[server]``, the test extra), a
real HTTP process that speaks the S3 protocol on a free port; botocore and
django-storages talk to it exactly as to any other endpoint. Each test gets a bucket
of its own.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

KEY, SECRET, REGION = "stereorank-test", "stereorank-test-secret", "us-east-1"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class S3Server:
    """``moto_server`` as a subprocess; ``env(bucket)`` is what a node needs to use it."""

    def __init__(self, log: Path) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(log, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"moto server did not start: {log.read_text()}") from None
                time.sleep(0.1)

    def client(self):
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.url,
            aws_access_key_id=KEY,
            aws_secret_access_key=SECRET,
            region_name=REGION,
        )

    def new_bucket(self) -> str:
        bucket = f"sr-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=bucket)
        return bucket

    def env(self, bucket: str) -> dict[str, str]:
        return {
            "STEREORANK_STORAGE": "s3",
            "STEREORANK_S3_BUCKET": bucket,
            "STEREORANK_S3_ENDPOINT_URL": self.url,
            "STEREORANK_S3_REGION": REGION,
            "STEREORANK_S3_ACCESS_KEY_ID": KEY,
            "STEREORANK_S3_SECRET_ACCESS_KEY": SECRET,
        }

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        pages = (
            self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        )
        return sorted(o["Key"] for page in pages for o in page.get("Contents", []))

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.log.close()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    server = S3Server(tmp_path_factory.mktemp("s3") / "moto.log")
    yield server
    server.stop()


@pytest.fixture
def object_store(s3_server, settings, monkeypatch) -> str:
    """This process's media and checkpoints on a fresh bucket; returns the bucket's name."""
    import environ

    from web import storage_settings

    bucket = s3_server.new_bucket()
    for name, value in s3_server.env(bucket).items():
        monkeypatch.setenv(name, value)
    kind, storages = storage_settings.storages(
        environ.Env(), static_backend=settings.STORAGES["staticfiles"]["BACKEND"]
    )
    settings.STORAGE_KIND, settings.STORAGES = kind, storages
    return bucket
