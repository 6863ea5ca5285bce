"""The staff API's numeric query parameters: each with a range, and a number out of it
(or not a number, or empty) a 400 that says the range."""

from django.conf import settings
from rest_framework.exceptions import ParseError

from core.ids import MAX_ID

# Bounds of the numeric query parameters: out of range is a 400 that says the range.
MAX_PAGE = 1_000_000
# Bootstrap draws: 2,000 is twice the default and what the literature asks of a 95%
# percentile interval (Davison and Hinkley 1997; Efron and Tibshirani: 1,000 or more).
# Each draw recomputes every figure (a report of 100,000 rankings takes 20 s a 1,000
# draws: docs/benchmarks.md), and each distinct n_boot is a report of its own, computed
# and stored on a worker: the old cap of 10,000 let one request hold a worker for minutes.
MAX_N_BOOT = 2_000


def int_param(request, name: str, low: int = 1, high: int = MAX_ID) -> int | None:
    """A whole-number query parameter from ``low`` to ``high``, or None when absent;
    anything else (empty too) is a 400 that says the range."""
    raw = request.query_params.get(name)
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        value = None
    if value is None or not low <= value <= high:
        raise ParseError(f"{name}: '{raw}' is not a whole number from {low} to {high}.")
    return value


def n_boot_param(request) -> int:
    """``?n_boot=`` (0 to ``MAX_N_BOOT``), default the setting."""
    n_boot = int_param(request, "n_boot", 0, MAX_N_BOOT)
    return settings.STEREORANK["QUALITY_N_BOOT"] if n_boot is None else n_boot
