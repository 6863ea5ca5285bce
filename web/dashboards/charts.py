"""Server-side plots for the staff dashboards, drawn with matplotlib (Agg).

Drawing functions take plain data and return a matplotlib ``Figure``; they use
``Figure`` directly, never ``pyplot``, so there is no global state shared across
threads. ``chart_response`` renders SVG (or PNG), cached by the content hash of the
data: the same data is drawn once and answered with ``304`` to a matching ETag. A chart
may name a group or an annotator, so it is cached in ``core.personal_cache``'s namespace,
which an erasure sweeps.

Charts are drawn at the size they are shown: one inch is 96 CSS pixels, the pages
show an image at its own width (``wide``: as drawn, about 670 px; ``narrow``:
310 px for a phone, ``dashboards/_chart.html``), so chart text is a little smaller
than the page's, never blown up. Value axes cover the measure's own range (rho to
1, alignment and W from 0 to 1) and never use offset notation. Each SVG carries a
``<title>`` and ``<desc>`` taken from the chart's own title and axis labels.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from html import escape
from typing import TYPE_CHECKING

from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, HttpResponseNotModified

from core import personal_cache

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def _figure(figsize: tuple[float, float]) -> tuple[Figure, Axes]:
    """A new Agg figure of ``figsize`` inches with one set of axes; matplotlib is imported
    on the first drawing, not with the URL conf."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(layout="constrained", figsize=figsize)
    return fig, fig.subplots()


def _interval(ax, y: float, value: float, low, high, colour: str, label: str | None, marker: str):
    """A point at ``value`` on row ``y`` with its horizontal 95% interval, if known."""
    if low is not None and high is not None:
        xerr = [[max(value - low, 0.0)], [max(high - value, 0.0)]]
        ax.errorbar([value], [y], xerr=xerr, fmt=marker, color=colour, capsize=3, label=label)
    else:
        ax.plot([value], [y], marker, color=colour, label=label)


def _label_rows(ax, labels: list[str], xlim: tuple[float, float], xlabel: str) -> None:
    """Rows of estimates with their intervals: the first label on top, the x range and
    label, a light vertical grid."""
    ax.set_yticks(range(len(labels)), labels)
    ax.invert_yaxis()
    ax.set_xlim(*xlim)
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", alpha=0.3)


def _empty(fig, ax, text: str):
    """The figure with only ``text`` in its middle: nothing to plot yet."""
    ax.text(0.5, 0.5, text, ha="center", va="center", color=MUTED)
    ax.set_axis_off()
    return fig


FORMATS = {"png": "image/png", "svg": "image/svg+xml"}
DEFAULT_FORMAT = "svg"
# CSS pixels per inch: a figure 7 inches wide is shown 672 px wide, in SVG and PNG alike.
PX_PER_INCH = 96
# ?size=: "wide" keeps each chart's own width; "narrow" redraws it this many px wide.
SIZES = {"wide": None, "narrow": 310}
# Bump when a drawing function changes, so cached images are not served stale.
STYLE_VERSION = 3
CACHE_SECONDS = 24 * 60 * 60
PRIMARY, ACCENT, MUTED = "#2451c7", "#e07b00", "#5d6675"


@dataclass(frozen=True)
class RhoPoint:
    """One version's headline Spearman with its 95% interval (either end may be None)."""

    label: str
    rho: float
    low: float | None = None
    high: float | None = None
    active: bool = False


def rho_across_versions(points: Sequence[RhoPoint], title: str = "") -> Figure:
    """Spearman's rho of each version with its 95% interval; the active one highlighted."""
    fig, ax = _figure((7, 3.2))
    if not points:
        return _empty(fig, ax, "No evaluated versions yet")
    xs = range(len(points))
    for x, p in zip(xs, points, strict=True):
        colour = ACCENT if p.active else PRIMARY
        if p.low is not None and p.high is not None:
            yerr = [[max(p.rho - p.low, 0.0)], [max(p.high - p.rho, 0.0)]]
            ax.errorbar([x], [p.rho], yerr=yerr, fmt="o", color=colour, capsize=4)
        else:
            ax.plot([x], [p.rho], "o", color=colour)
    ax.axhline(0.0, color=MUTED, linewidth=0.8, linestyle="--")
    lowest = min(p.rho if p.low is None else min(p.low, p.rho) for p in points)
    ax.set_ylim(min(0.0, lowest) - 0.05, 1.0)  # rho's ceiling, and 0 always in view
    ax.set_xlim(-0.5, len(points) - 0.5)
    ax.set_xticks(list(xs), [p.label for p in points], rotation=45 if len(points) > 8 else 0)
    ax.set_ylabel("Spearman's rho (95% CI)")
    ax.set_xlabel("version (orange: active)")
    if title:
        ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    return fig


def _finite(value: float | None) -> bool:
    """A rho that can be drawn: not None (stored NaN), not NaN, not infinite."""
    return value is not None and math.isfinite(value)


def occupations_side_by_side(
    label_a: str, per_a: dict[str, float | None], label_b: str, per_b: dict[str, float | None]
) -> Figure:
    """Per-occupation rho of two versions as paired horizontal bars.

    A missing rho (absent, None or NaN: the occupation was not scored, or its
    labels or scores were all tied) gets no bar but an "n/a" mark and a note.
    """
    names = sorted(set(per_a) | set(per_b))
    height = max(2.5, 0.28 * len(names) + 1.2)
    fig, ax = _figure((7, height))
    if not names:
        return _empty(fig, ax, "No per-occupation figures")
    bar = 0.4
    missing = 0
    for offset, per, colour, label in (
        (-bar / 2, per_a, PRIMARY, label_a),
        (bar / 2, per_b, ACCENT, label_b),
    ):
        drawn = [(y + offset, per[n]) for y, n in enumerate(names) if _finite(per.get(n))]
        ax.barh([y for y, _ in drawn], [v for _, v in drawn], height=bar, color=colour, label=label)
        for y, n in enumerate(names):
            if not _finite(per.get(n)):
                missing += 1
                ax.text(0.02, y + offset, "n/a", va="center", ha="left", fontsize=8, color=colour)
    ax.set_yticks(list(range(len(names))), names)
    ax.set_ylim(len(names) - 0.5, -0.5)  # first name on top
    values = [v for per in (per_a, per_b) for v in per.values() if _finite(v)]
    # From 0 (or the lowest rho) to rho's ceiling, with room for an "n/a" at 0.
    ax.set_xlim(min([0.0, *values]) - 0.05, 1.0)
    ax.axvline(0.0, color=MUTED, linewidth=0.8)
    note = "\nn/a: no rho (not scored, or all labels or scores tied)" if missing else ""
    ax.set_xlabel("Spearman's rho per occupation" + note)
    # Above the plot, never over a bar.
    ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=2, frameon=False)
    ax.grid(axis="x", alpha=0.3)
    return fig


@dataclass(frozen=True)
class IntervalPoint:
    """One labelled estimate with its 95% interval (either end may be None)."""

    label: str
    value: float
    low: float | None = None
    high: float | None = None


def estimates_with_intervals(points: Sequence[IntervalPoint], xlabel: str) -> Figure:
    """Horizontal points with 95% intervals, one row per label (e.g. W per occupation)."""
    height = max(2.5, 0.28 * len(points) + 1.2)
    fig, ax = _figure((7, height))
    if not points:
        return _empty(fig, ax, "Nothing measured yet")
    for y, p in enumerate(points):
        _interval(ax, y, p.value, p.low, p.high, PRIMARY, None, "o")
    ax.axvline(0.0, color=MUTED, linewidth=0.8)
    ends = [v for p in points for v in (p.value, p.low, p.high) if v is not None]
    xlim = (min([0.0, *ends]) - 0.02, max([1.0, *ends]) + 0.02)  # W and alpha: 0 to 1
    _label_rows(ax, [p.label for p in points], xlim, xlabel)
    return fig


def position_heatmap(table: Sequence[Sequence[int]], title: str = "") -> Figure:
    """A K x K count table as a heat map: rows shown position, columns submitted position;
    with no position bias every cell is near n / K (white: the colour scale is centred
    there, blue below, red above)."""
    fig, ax = _figure((4.6, 4.0))
    k = len(table)
    if not k:
        return _empty(fig, ax, "No rankings")
    from matplotlib.colors import TwoSlopeNorm

    expected = max(sum(table[0]) / k, 0.5)
    top = max(max(row) for row in table)
    norm = TwoSlopeNorm(vmin=0, vcenter=expected, vmax=max(top, 2 * expected))
    image = ax.imshow(table, cmap="RdBu_r", norm=norm, aspect="equal")
    for s in range(k):
        for f in range(k):
            far = abs(norm(table[s][f]) - 0.5) > 0.35
            colour = "white" if far else "black"
            ax.text(f, s, str(table[s][f]), ha="center", va="center", fontsize=8, color=colour)
    labels = [str(i + 1) for i in range(k)]
    ax.set_xticks(range(k), labels)
    ax.set_yticks(range(k), labels)
    ax.set_xlabel("submitted position")
    ax.set_ylabel("shown position")
    fig.colorbar(image, ax=ax, shrink=0.8, label=f"rankings (expected {expected:.1f})")
    if title:
        ax.set_title(title, fontsize=10)
    return fig


@dataclass(frozen=True)
class GroupPoint:
    """One group's alignment and human baseline, each with its 95% interval (ends may be None)."""

    group: str
    alignment: float
    low: float | None = None
    high: float | None = None
    baseline: float | None = None
    baseline_low: float | None = None
    baseline_high: float | None = None


def groups_alignment(points: Sequence[GroupPoint], title: str = "") -> Figure:
    """Each group's alignment with the model (blue) beside its human baseline (orange),
    95% intervals, groups in the order given (best aligned first, at the top)."""
    fig, ax = _figure((7, max(2.5, 0.42 * len(points) + 1.3)))
    if not points:
        return _empty(fig, ax, "No group of k or more")
    for y, p in enumerate(points):
        _interval(ax, y - 0.12, p.alignment, p.low, p.high, PRIMARY, "the model", "o")
        if p.baseline is not None:
            rest = "the other annotators (baseline)"
            _interval(ax, y + 0.12, p.baseline, p.baseline_low, p.baseline_high, ACCENT, rest, "s")
    xlabel = "alignment 1 - W1/(K-1) (95% CI)"
    _label_rows(ax, [p.group for p in points], (0.0, 1.0), xlabel)  # alignment's whole range
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))  # one legend entry per series
    ax.legend(unique.values(), unique.keys(), fontsize="small")
    if title:
        ax.set_title(title)
    return fig


def groups_across_versions(
    versions: Sequence[str], series: dict[str, Sequence[float | None]], title: str = ""
) -> Figure:
    """One line per group: its alignment at each version (a gap where it has none)."""
    fig, ax = _figure((7, 3.4))
    if not versions or not series:
        return _empty(fig, ax, "No perspective reports yet")
    xs = list(range(len(versions)))
    for group in sorted(series):
        ys = [float("nan") if v is None else v for v in series[group]]
        ax.plot(xs, ys, "o-", label=group)
    ax.set_xticks(xs, list(versions), rotation=45 if len(versions) > 8 else 0)
    ax.set_xlim(-0.5, len(versions) - 0.5)
    ax.set_ylim(0.0, 1.0)  # alignment's whole range: a change of 1e-6 stays flat
    ax.set_ylabel("alignment with the group")
    ax.set_xlabel("version")
    ax.legend(fontsize="small", ncols=2 if len(series) > 4 else 1)
    if title:
        ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    return fig


def _plain_numbers(fig: Figure) -> None:
    """No offset or scientific notation on any axis (``1e-6+6.72e-1`` reads as a slope)."""
    from matplotlib.ticker import ScalarFormatter

    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            formatter = axis.get_major_formatter()
            if isinstance(formatter, ScalarFormatter):
                formatter.set_useOffset(False)
                formatter.set_scientific(False)


def describe(fig: Figure) -> tuple[str, str]:
    """A title and a description of the chart from its own texts (for the SVG)."""
    titles, parts = [], []
    for ax in fig.axes:
        if ax.get_title():
            titles.append(ax.get_title())
        for name, label in (("horizontal", ax.get_xlabel()), ("vertical", ax.get_ylabel())):
            if label:
                parts.append(f"{name} axis: {' '.join(label.split())}")
        if not ax.axison:
            parts.extend(t.get_text() for t in ax.texts)
    return "; ".join(titles) or "Chart", "; ".join(parts)


def _accessible_svg(svg: bytes, title: str, desc: str) -> bytes:
    """The SVG with ``role="img"``, a ``<title>`` and a ``<desc>`` first inside its root."""
    text = svg.decode()
    root = re.search(r"<svg\b[^>]*>", text)
    head = root.group(0).replace("<svg", '<svg role="img" aria-labelledby="chart-title"', 1)
    inner = f'<title id="chart-title">{escape(title)}</title><desc>{escape(desc)}</desc>'
    return (text[: root.start()] + head + inner + text[root.end() :]).encode()


def render(fig: Figure, fmt: str) -> bytes:
    """The figure as SVG or PNG bytes at 96 px an inch; deterministic (no dates, fixed ids)."""
    if fmt not in FORMATS:
        raise ValueError(f"Unknown chart format '{fmt}'; use one of {', '.join(FORMATS)}.")
    _plain_numbers(fig)
    buffer = io.BytesIO()
    import matplotlib

    with matplotlib.rc_context({"svg.hashsalt": "stereorank", "svg.fonttype": "none"}):
        metadata = {"Software": None} if fmt == "png" else {"Date": None, "Creator": None}
        fig.savefig(buffer, format=fmt, dpi=PX_PER_INCH, metadata=metadata)
    if fmt == "svg":
        return _accessible_svg(buffer.getvalue(), *describe(fig))
    return buffer.getvalue()


def content_key(name: str, data: object, fmt: str, size: str = "wide") -> str:
    """A hash of what a chart shows: same data, same key."""
    payload = json.dumps(
        {"chart": name, "v": STYLE_VERSION, "fmt": fmt, "size": size, "data": data},
        sort_keys=True,
        default=lambda o: asdict(o) if hasattr(o, "__dataclass_fields__") else str(o),
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def chart_response(
    request: HttpRequest, name: str, data: object, draw: Callable[[], Figure]
) -> HttpResponse:
    """Answer a chart request: ``?format=svg|png`` (svg by default), ``?size=wide|narrow``;
    cached and ETagged by content."""
    fmt = request.GET.get("format", DEFAULT_FORMAT)
    if fmt not in FORMATS:
        return HttpResponse(
            f"Unknown chart format '{fmt}'; use png or svg.", status=400, content_type="text/plain"
        )
    size = request.GET.get("size", "wide")
    if size not in SIZES:
        return HttpResponse(
            f"Unknown chart size '{size}'; use {' or '.join(SIZES)}.",
            status=400,
            content_type="text/plain",
        )
    key = content_key(name, data, fmt, size)
    etag = f'"{key}"'
    if request.headers.get("If-None-Match") == etag:
        return HttpResponseNotModified(headers={"ETag": etag})
    body = cache.get(personal_cache.key(f"chart:{key}"))
    if body is None:
        fig = draw()
        if SIZES[size]:
            fig.set_figwidth(SIZES[size] / PX_PER_INCH)
        body = render(fig, fmt)
        cache.set(personal_cache.key(f"chart:{key}"), body, CACHE_SECONDS)
    response = HttpResponse(body, content_type=FORMATS[fmt])
    response["ETag"] = etag
    response["Cache-Control"] = "private, max-age=0, must-revalidate"
    return response


def draw_response(
    request: HttpRequest, name: str, draw: Callable[..., Figure], **data: object
) -> HttpResponse:
    """``chart_response`` for ``draw(**data)``: the same keyword data are what the chart is
    cached by and what it is drawn from."""
    return chart_response(request, name, data, lambda: draw(**data))
