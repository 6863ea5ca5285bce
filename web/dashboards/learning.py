"""The learning curve on the progress dashboard: the stored curve's chart and the study
lead's line. Reads stored curves only (``manage.py learning_curve`` or the default queue
computes them); a page never trains."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseNotFound
from django.shortcuts import redirect

from annotation.access import roles
from training import selectors
from training.runs import learning_curves

from .base import found, staff_action, staff_only
from .charts import ACCENT, MUTED, PRIMARY, _empty, _figure, draw_response

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from training.models import LearningCurve

MORE = (100, 500)


def learning_curve_figure(
    points: list[tuple[int, float]], fit: dict, n_rankings: int, title: str = ""
) -> Figure:
    """Eval rho of each draw against the rankings it used, the fitted curve, and its
    projection 500 rankings on (dashed) with the gain's 95% interval."""
    import numpy as np

    from training.ml.learning_curve import inverse_power_law

    fig, ax = _figure((7, 3.4))
    if not points or not fit:
        return _empty(fig, ax, "No learning curve yet")
    xs, ys = zip(*points, strict=True)
    ax.plot(xs, ys, "o", color=PRIMARY, alpha=0.6, label="eval rho of one draw")
    params = (fit["a"], fit["b"], fit["c"])
    low_share = min(xs) / n_rankings
    seen = np.linspace(low_share, 1.0, 60)
    ahead = np.linspace(1.0, 1.0 + MORE[-1] / n_rankings, 30)
    ax.plot(seen * n_rankings, inverse_power_law(seen, *params), color=PRIMARY, label="fitted")
    ax.plot(
        ahead * n_rankings,
        inverse_power_law(ahead, *params),
        "--",
        color=ACCENT,
        label=f"projected, {MORE[-1]} more",
    )
    target = n_rankings + MORE[-1]
    gain = fit[f"gain_next_{MORE[-1]}"]
    rho_next = fit["rho_now"] + gain
    ci = (fit.get("intervals") or {}).get(f"gain_next_{MORE[-1]}")
    if ci:  # the projected rho's interval: rho now plus the gain's
        yerr = [[max(gain - ci[0], 0.0)], [max(ci[1] - gain, 0.0)]]
        ax.errorbar([target], [rho_next], yerr=yerr, fmt="s", color=ACCENT, capsize=4)
    else:
        ax.plot([target], [rho_next], "s", color=ACCENT)
    ax.axvline(n_rankings, color=MUTED, linewidth=0.8, linestyle=":")
    lowest = min(min(ys), rho_next)
    ax.set_ylim(min(0.0, lowest) - 0.05, 1.0)
    ax.set_xlim(0, target * 1.05)
    ax.set_xlabel("rankings used (dotted: all of the snapshot's)")
    ax.set_ylabel("eval Spearman's rho")
    if title:
        ax.set_title(title)
    ax.legend(loc="lower right", fontsize="small")
    ax.grid(alpha=0.3)
    return fig


def chart_data(curve: LearningCurve) -> dict:
    """What the chart is drawn (and cached) from."""
    n = curve.n_rankings or 1
    points = [(round(p["share"] * n), p["rho"]) for p in curve.points if p["rho"] is not None]
    return {
        "points": points,
        "fit": curve.fit,
        "n_rankings": n,
        "title": f"Learning curve, snapshot {curve.snapshot_id}",
    }


def context(viewer) -> dict:
    """The progress page's learning-curve section: the newest finished curve of the
    snapshots ``viewer`` may see, its lines, and whether a newer one has none yet."""
    curve = selectors.latest_learning_curve(viewer)
    latest = selectors.latest_snapshot(viewer)
    newer = latest if latest and (curve is None or latest.pk != curve.snapshot_id) else None
    pending = selectors.learning_curve(newer) if newer else None
    return {
        "curve": curve,
        "lines": [learning_curves.summary(curve, m) for m in MORE] if curve else [],
        "newer_snapshot": newer.pk if newer else None,
        "newer_status": pending.status if pending else "",
    }


@staff_action("dashboards:progress")
def learning_curve_request(request: HttpRequest, snapshot_id: int) -> HttpResponse:
    """Queue a snapshot's learning curve on the default queue (a page never trains)."""
    snapshot = selectors.snapshot(snapshot_id, request.user, roles.RUN_STUDY)
    snapshot = found(snapshot, "No such snapshot.")
    learning_curves.request(snapshot)
    messages.success(
        request,
        f"Learning curve of snapshot {snapshot.pk} queued: a worker computes it (a minute or "
        "more); reload this page to see it.",
    )
    return redirect("dashboards:progress")


@staff_only
def learning_curve_chart(request: HttpRequest, snapshot_id: int) -> HttpResponse:
    """The stored learning curve of one snapshot as a chart."""
    snapshot = selectors.snapshot(snapshot_id, request.user)
    curve = selectors.learning_curve(snapshot) if snapshot else None
    if curve is None or curve.fit is None:
        return HttpResponseNotFound(
            f"snapshot {snapshot_id} has no learning curve: manage.py learning_curve {snapshot_id}",
            content_type="text/plain",
        )
    return draw_response(request, "learning-curve", learning_curve_figure, **chart_data(curve))
