"""Safe uploads (issue 31, part 6): an item image is stored only if Pillow decodes it as a
still PNG, JPEG or WebP within the pixel limit, under a name and extension the server
chooses; the media view serves images only, with their own content type and nosniff.
Each door is tried as an attacker would: HTML named .png, an SVG, a decompression bomb
(a PNG of a few hundred bytes whose header says 30,000 x 30,000: never allocated)."""

import io
import json
import struct
import zlib

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from PIL import Image

from annotation.catalogue.images import UnsafeImage, check_image
from annotation.catalogue.importing import import_manifest
from annotation.catalogue.loading import load_catalogue
from annotation.errors import ConditionError
from annotation.models import Item, Prompt, Study
from annotation.validation import conditions, generation

HTML = b"<!doctype html><html><body><script>alert(document.cookie)</script></body></html>"
SVG = (
    b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" width="10" height="10">'
    b"<script>alert(1)</script><rect width='10' height='10'/></svg>"
)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_bomb(side: int = 30_000) -> bytes:
    """A valid PNG signature and header saying ``side`` x ``side`` RGB, then one tiny IDAT:
    what a bomb looks like to a reader that trusts the header (a few hundred bytes)."""
    header = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    first_rows = zlib.compress(b"\0" * (1 + 3 * side) * 4, 9)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", first_rows)
        + _chunk(b"IEND", b"")
    )


def encoded(fmt: str, size=(12, 8)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, (200, 40, 90)).save(buffer, format=fmt)
    return buffer.getvalue()


def test_the_bomb_is_small_and_says_30000_square():
    bomb = png_bomb()
    assert len(bomb) < 2_000
    assert struct.unpack(">II", bomb[16:24]) == (30_000, 30_000)  # IHDR's width, height


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (HTML, "evil.png: not a PNG, JPEG or WebP image"),
        (SVG, "evil.png: not a PNG, JPEG or WebP image"),
        (png_bomb(), "evil.png: a decompression bomb, more than the 40,000,000 pixels allowed"),
        (encoded("PNG")[:50], "evil.png: a broken PNG, JPEG or WebP image"),
        (encoded("GIF"), "evil.png: not a PNG, JPEG or WebP image"),
        (encoded("BMP"), "evil.png: not a PNG, JPEG or WebP image"),
    ],
)
def test_what_is_not_an_allowed_raster_is_refused_in_one_line(data, says):
    with pytest.raises(UnsafeImage) as refused:
        check_image(data, "evil.png")
    assert refused.value.message.startswith(says)
    assert "\n" not in refused.value.message


def test_the_pixel_limit_is_read_from_the_header_before_decoding(settings):
    settings.STEREORANK = {**settings.STEREORANK, "MAX_IMAGE_PIXELS": 12 * 8 - 1}
    with pytest.raises(UnsafeImage, match=r"a.png: 12 x 8 pixels, more than the 95 pixels"):
        check_image(encoded("PNG"), "a.png")
    settings.STEREORANK = {**settings.STEREORANK, "MAX_IMAGE_PIXELS": 12 * 8}
    assert check_image(encoded("PNG"), "a.png").extension == ".png"


def test_animations_are_refused():
    buffer = io.BytesIO()
    frames = [Image.new("RGB", (4, 4), c) for c in ("red", "blue")]
    frames[0].save(buffer, format="PNG", save_all=True, append_images=frames[1:])
    with pytest.raises(UnsafeImage, match="an animated image"):
        check_image(buffer.getvalue(), "moving.png")


@pytest.mark.parametrize(
    ("fmt", "extension"), [("PNG", ".png"), ("JPEG", ".jpg"), ("WEBP", ".webp")]
)
def test_allowed_formats_get_the_extension_of_what_they_decode_as(fmt, extension):
    assert check_image(encoded(fmt), "x.bin").extension == extension


@pytest.fixture
def loaded(db, media_root):
    load_catalogue()


def _manifest(folder, files: dict[str, bytes]):
    rows = []
    for i, (name, data) in enumerate(files.items()):
        (folder / name).write_bytes(data)
        rows.append(
            {
                "prompt": f"Generate an image of a nurse, take {i}",
                "occupation": "nurse",
                "prompt_type": "neutral",
                "image": name,
            }
        )
    manifest = folder / "manifest.jsonl"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return manifest


def test_import_refuses_html_svg_and_a_bomb_naming_each_file(tmp_path, loaded):
    manifest = _manifest(
        tmp_path,
        {"page.png": HTML, "drawing.svg": SVG, "bomb.png": png_bomb(), "fine.png": encoded("PNG")},
    )
    err = io.StringIO()
    with pytest.raises(CommandError, match="3 problem"):
        call_command("import_items", str(manifest), stdout=io.StringIO(), stderr=err)
    lines = err.getvalue().splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("row 1: ") and "page.png: not a PNG, JPEG or WebP" in lines[0]
    assert lines[1].startswith("row 2: ") and "drawing.svg: not a PNG, JPEG or WebP" in lines[1]
    assert lines[2].startswith("row 3: ") and "bomb.png: a decompression bomb" in lines[2]
    assert Item.objects.filter(is_placeholder=False).count() == 0


def test_the_server_names_the_stored_file_from_the_decoded_format(tmp_path, loaded):
    # A JPEG named .html is a JPEG: stored as .jpg, whatever its name said.
    manifest = _manifest(tmp_path, {"photo.html": encoded("JPEG"), "other.PNG": encoded("WEBP")})
    assert import_manifest(manifest) == {"created": 2, "skipped": 0}
    names = sorted(i.image.name for i in Item.objects.filter(is_placeholder=False))
    assert [n.rsplit(".", 1)[1] for n in names] == ["jpg", "webp"]
    assert all(n.startswith("items/") and "photo" not in n and "other" not in n for n in names)


def test_the_validation_import_refuses_a_bomb_in_one_line(tmp_path, loaded):
    study = Study.objects.create(slug="val", name="V", platform="generic", kind="validation")
    conditions.original(study, list(Prompt.objects.filter(origin__isnull=True)[:1]))
    rows = generation.manifest_rows(study, images_per_prompt=1)
    (tmp_path / rows[0]["image"]).parent.mkdir(parents=True)
    (tmp_path / rows[0]["image"]).write_bytes(png_bomb())
    manifest = tmp_path / "back.jsonl"
    manifest.write_text(json.dumps(rows[0]) + "\n")
    with pytest.raises(ConditionError) as refused:
        generation.import_images(study, manifest)
    message = refused.value.message
    assert "\n" not in message and "a decompression bomb" in message
    assert rows[0]["image"].rsplit("/", 1)[1] in message and "nothing was imported" in message


def test_media_is_served_as_an_image_with_nosniff_and_nothing_else(media_root, db):
    (media_root / "items" / "a.png").write_bytes(encoded("PNG"))
    (media_root / "items" / "b.webp").write_bytes(encoded("WEBP"))
    (media_root / "items" / "page.html").write_bytes(HTML)
    (media_root / "items" / "drawing.svg").write_bytes(SVG)
    client = Client()
    for name, content_type in (("a.png", "image/png"), ("b.webp", "image/webp")):
        response = client.get(f"/media/items/{name}")
        assert response.status_code == 200
        assert response["Content-Type"] == content_type
        assert response["X-Content-Type-Options"] == "nosniff"
        assert "sandbox" in response["Content-Security-Policy"]
    for name in ("page.html", "drawing.svg", "../../etc/passwd"):
        assert client.get(f"/media/items/{name}").status_code == 404
