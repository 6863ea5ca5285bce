"""The Content-Security-Policy every page carries (django-csp's ``CONTENT_SECURITY_POLICY``).

Scripts come only from this site's own files (``script-src 'self'``): no inline script,
no ``eval``, no other host, so markup an attacker slips into a page (a prompt text, a
demographic answer) cannot run. Every template keeps its JavaScript in a static file
(tests/project/test_project_csp.py scans them). Styles also allow inline ``style``
attributes and ``<style>`` blocks (progress bars are drawn with a computed width,
the dashboards keep their sheet inline): CSS cannot run script. Images: this site,
``data:`` URIs (the Swagger UI's icons) and, with media on an object store, the store's
host (``media_sources``) plus ``STEREORANK_CSP_IMG_SRC``. No plugins (``object-src
'none'``), no ``<base>`` elsewhere, no framing (as ``X-Frame-Options: DENY``). No
``form-action``: a crowd platform's exit link (a redirect after a form, MTurk's
``externalSubmit``) leaves the site by design.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from csp.constants import NONE, SELF, UNSAFE_INLINE
from environ import Env

AWS_HOSTS = "https://*.amazonaws.com"


def media_sources(storages: dict) -> list[str]:
    """The origins item images are loaded from besides this site (the object store's)."""
    options = storages.get("default", {}).get("OPTIONS") or {}
    if not options:
        return []
    if options.get("custom_domain"):
        return [f"https://{options['custom_domain']}"]
    endpoint = options.get("endpoint_url")
    if not endpoint:
        return [AWS_HOSTS]
    parts = urlsplit(endpoint)
    origin = f"{parts.scheme}://{parts.netloc}"
    # Virtual-hosted addressing puts the bucket in front of the endpoint's host.
    return [origin, f"{parts.scheme}://*.{parts.netloc}"]


def policy(env: Env, storages: dict) -> dict:
    """``CONTENT_SECURITY_POLICY`` for django-csp 4."""
    images = [SELF, "data:", *media_sources(storages)]
    images += env.list("STEREORANK_CSP_IMG_SRC", default=[])
    return {
        "DIRECTIVES": {
            "default-src": [SELF],
            "script-src": [SELF],
            "style-src": [SELF, UNSAFE_INLINE],
            "img-src": images,
            "connect-src": [SELF],
            "object-src": [NONE],
            "base-uri": [SELF],
            "frame-ancestors": [NONE],
        }
    }
