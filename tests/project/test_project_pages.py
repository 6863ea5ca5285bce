"""Project-level pages: the API docs offline, the API root, the plain error pages."""

from html.parser import HTMLParser
from urllib.parse import urlsplit

import pytest
from django.test import Client


class _AssetLinks(HTMLParser):
    """Every URL a page makes the browser fetch: script src, link href, img src."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        wanted = {"script": "src", "link": "href", "img": "src"}.get(tag)
        for name, value in attrs:
            if name == wanted and value:
                self.urls.append(value)


def _asset_urls(html: str) -> list[str]:
    parser = _AssetLinks()
    parser.feed(html)
    return parser.urls


@pytest.mark.django_db
def test_api_docs_load_only_local_static_assets_and_they_are_served(settings):
    # Serve from the apps' static folders, as the embedded mode does (no collectstatic).
    settings.WHITENOISE_USE_FINDERS = True
    client = Client()
    page = client.get("/api/docs/")
    assert page.status_code == 200
    urls = _asset_urls(page.content.decode())
    scripts = [u for u in urls if u.endswith(".js")]
    assert len(scripts) >= 2, urls  # the Swagger UI bundle and its preset
    for url in urls:
        parts = urlsplit(url)
        assert not parts.scheme and not parts.netloc, f"{url} is fetched from another host"
        assert parts.path.startswith("/" + settings.STATIC_URL.lstrip("/")), url
        asset = client.get(parts.path)
        assert asset.status_code == 200, url
        body = b"".join(asset.streaming_content) if asset.streaming else asset.content
        assert len(body) > 100, url
