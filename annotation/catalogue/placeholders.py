"""Honest placeholder images: the prompt text on a card, marked as a placeholder."""

import functools
import io
import textwrap

from PIL import Image, ImageDraw, ImageFont

SIZE = 384
COLOURS = {"stereotypical": "#f4e1d2", "neutral": "#e4e8ee", "diverse": "#dcefe0"}


# A pure function of its arguments: cached, about 11 kB a card, 6 MB at most.
@functools.lru_cache(maxsize=512)
def placeholder_png(prompt: str, prompt_type: str, variant: int, label: str = "") -> bytes:
    """A deterministic PNG card showing ``prompt``; not a generated image, and it says so.

    ``label`` replaces the bottom line (``variant N``), e.g. to tell two studies' cards apart.
    Cached: loading a catalogue again (a second study, a test's fresh database) draws
    each card once per process.
    """
    image = Image.new("RGB", (SIZE, SIZE), COLOURS.get(prompt_type, "#eeeeee"))
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=20)
    small = ImageFont.load_default(size=14)
    draw.rectangle([0, 0, SIZE, 34], fill="#333333")
    draw.text((10, 8), "PLACEHOLDER - not a generated image", fill="white", font=small)
    y = 60
    for line in textwrap.wrap(prompt, width=30):
        draw.text((16, y), line, fill="#222222", font=font)
        y += 26
    draw.text((16, SIZE - 28), label or f"variant {variant}", fill="#555555", font=small)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=1)  # fast; flat cards compress well anyway
    return buffer.getvalue()
