"""The one gate every item image passes before it is stored: decoded by Pillow as PNG,
JPEG or WebP within a pixel limit, or refused in one line that names the file.

An upload is only what its bytes decode as, never what its name says: a file is
opened with Pillow's PNG, JPEG and WebP readers only (no other parser, Ghostscript's
EPS reader included, ever sees it), its header's size is checked against
``STEREORANK["MAX_IMAGE_PIXELS"]`` before a pixel is decoded (a 30,000 x 30,000 PNG
of a few hundred bytes is refused without allocating it), then it is decoded whole
(a truncated file is refused). HTML named ``.png``, SVG (text, not a raster) and
animations are refused. The server names the stored file: ``EXTENSIONS`` of the
decoded format, so the media view serves it with that format's content type. A validation
study's images are stored as ``pixels_only`` PNGs (its cards are blinded).
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass

from django.conf import settings
from PIL import Image, UnidentifiedImageError

from annotation.errors import AnnotationError

# Pillow's format name -> the extension the stored file gets (and the media view serves).
EXTENSIONS = {"PNG": ".png", "JPEG": ".jpg", "WEBP": ".webp"}
CONTENT_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".webp": "image/webp"}


class UnsafeImage(AnnotationError):
    """A file that is not a still PNG, JPEG or WebP image within the pixel limit."""


@dataclass(frozen=True)
class CheckedImage:
    format: str
    width: int
    height: int

    @property
    def extension(self) -> str:
        return EXTENSIONS[self.format]


def max_pixels() -> int:
    return settings.STEREORANK["MAX_IMAGE_PIXELS"]


def check_image(data: bytes, name: str) -> CheckedImage:
    """What ``data`` decodes as; ``UnsafeImage`` naming ``name`` when it is not allowed."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data), formats=list(EXTENSIONS)) as image:
                width, height = image.size
                if width * height > max_pixels():
                    raise UnsafeImage(_too_big(name, f"{width} x {height} pixels"))
                if getattr(image, "is_animated", False):
                    raise UnsafeImage(f"{name}: an animated image; only still images are allowed")
                found = image.format
                image.load()
    except UnidentifiedImageError:
        raise UnsafeImage(f"{name}: not a PNG, JPEG or WebP image") from None
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise UnsafeImage(_too_big(name, "a decompression bomb")) from None
    except (OSError, SyntaxError, ValueError) as error:
        raise UnsafeImage(f"{name}: a broken PNG, JPEG or WebP image ({error})") from None
    return CheckedImage(found, width, height)


def _too_big(name: str, what: str) -> str:
    return (
        f"{name}: {what}, more than the {max_pixels():,} pixels allowed "
        "(STEREORANK_MAX_IMAGE_PIXELS)"
    )


def pixels_only(data: bytes) -> bytes:
    """``data`` (an image ``check_image`` passed) as a PNG of its pixels alone: no text
    chunk (a generator's "parameters", its prompt), no EXIF, XMP or colour profile, nothing
    after the image, and one format whatever the generator wrote. A blinded card's bytes
    then say nothing but what the participant sees."""
    with Image.open(io.BytesIO(data), formats=list(EXTENSIONS)) as image:
        image.load()
        alpha = image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info
        pixels = image.convert("RGBA" if alpha else "RGB")
    out = io.BytesIO()
    pixels.save(out, format="PNG")
    return out.getvalue()
