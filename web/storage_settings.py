"""Where media (item images) and checkpoints live: the ``STORAGES`` setting.

``STEREORANK_STORAGE=local`` (the default, the embedded mode's): item images under
MEDIA_ROOT and checkpoints under CHECKPOINT_DIR, one filesystem shared by every process.

``STEREORANK_STORAGE=s3``: both on an S3-compatible object store through django-storages
(AWS S3, MinIO, Ceph, ...), so web, worker and gpu nodes share no filesystem. Images go
to the ``default`` storage under STEREORANK_S3_MEDIA_PREFIX; checkpoints to a
``checkpoints`` storage under STEREORANK_S3_CHECKPOINT_PREFIX (training/storage/checkpoint_store.py
writes and fetches them; CHECKPOINT_DIR is then only each node's cache). Settings:

- STEREORANK_S3_BUCKET (required), STEREORANK_S3_ENDPOINT_URL (blank: AWS),
  STEREORANK_S3_REGION, STEREORANK_S3_ACCESS_KEY_ID / STEREORANK_S3_SECRET_ACCESS_KEY
  (blank: boto3's own chain: environment, instance role, ...);
- STEREORANK_S3_ADDRESSING_STYLE: ``path`` (default with an endpoint URL) or ``virtual``;
- STEREORANK_S3_QUERYSTRING_AUTH (default true: the bucket stays private and image URLs
  are signed for STEREORANK_S3_URL_EXPIRY seconds), STEREORANK_S3_CUSTOM_DOMAIN (a CDN
  or public host in front of the bucket: URLs unsigned on that host).
"""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured
from environ import Env

LOCAL, S3 = "local", "s3"


def _s3_options(env: Env, location: str) -> dict:
    endpoint = env.str("STEREORANK_S3_ENDPOINT_URL", default="") or None
    options = {
        "bucket_name": env.str("STEREORANK_S3_BUCKET", default=""),
        "endpoint_url": endpoint,
        "region_name": env.str("STEREORANK_S3_REGION", default="") or None,
        "access_key": env.str("STEREORANK_S3_ACCESS_KEY_ID", default="") or None,
        "secret_key": env.str("STEREORANK_S3_SECRET_ACCESS_KEY", default="") or None,
        "addressing_style": env.str(
            "STEREORANK_S3_ADDRESSING_STYLE", default="path" if endpoint else ""
        )
        or None,
        "signature_version": "s3v4",
        "location": location,
        # Names are content hashes or version numbers: a second save of a name replaces it.
        "file_overwrite": True,
        "querystring_auth": env.bool("STEREORANK_S3_QUERYSTRING_AUTH", default=True),
        "querystring_expire": env.int("STEREORANK_S3_URL_EXPIRY", default=3600),
        "custom_domain": env.str("STEREORANK_S3_CUSTOM_DOMAIN", default="") or None,
    }
    if not options["bucket_name"]:
        raise ImproperlyConfigured("STEREORANK_STORAGE=s3 needs STEREORANK_S3_BUCKET")
    return options


def storages(env: Env, *, static_backend: str) -> tuple[str, dict]:
    """``(kind, STORAGES)`` from the environment; ``kind`` is ``local`` or ``s3``."""
    kind = env.str("STEREORANK_STORAGE", default=LOCAL).strip().lower()
    result = {"staticfiles": {"BACKEND": static_backend}}
    if kind == LOCAL:
        # Django's, writing each file whole or not at all (a full disk leaves no half file).
        result["default"] = {"BACKEND": "core.storage.FileSystemStorage"}
    elif kind == S3:
        backend = "storages.backends.s3.S3Storage"
        media = env.str("STEREORANK_S3_MEDIA_PREFIX", default="media").strip("/")
        checkpoints = env.str("STEREORANK_S3_CHECKPOINT_PREFIX", default="checkpoints").strip("/")
        if not checkpoints or checkpoints == media:
            raise ImproperlyConfigured(
                "STEREORANK_S3_CHECKPOINT_PREFIX must be a folder of its own, "
                f"not {checkpoints!r} (media: {media!r})"
            )
        result["default"] = {"BACKEND": backend, "OPTIONS": _s3_options(env, media)}
        checkpoint_options = _s3_options(env, checkpoints)
        # Checkpoints are never linked to: no CDN, no signed URLs.
        checkpoint_options.update(custom_domain=None, querystring_auth=True)
        result["checkpoints"] = {"BACKEND": backend, "OPTIONS": checkpoint_options}
    else:
        raise ImproperlyConfigured(f"STEREORANK_STORAGE is {kind!r}: use local or s3")
    return kind, result
