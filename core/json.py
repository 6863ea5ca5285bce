"""JSON helpers, pure Python (``training.ml`` uses them too, so no Django here)."""

import math
from dataclasses import asdict


def json_safe(value):
    """``value`` with NaN and infinities as ``None`` and numpy scalars as Python ones
    (JSON and PostgreSQL's jsonb refuse non-finite numbers)."""
    if type(value).__module__ == "numpy" and hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


class AsDict:
    """A dataclass mixin: ``as_dict``, the plain dict of its fields (for JSON)."""

    def as_dict(self) -> dict:
        """Plain dict (for JSON)."""
        return asdict(self)
