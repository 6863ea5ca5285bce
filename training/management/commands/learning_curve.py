import json

from django.core.management.base import CommandError

from annotation.access.scope import SYSTEM
from core.commands import ServiceCommand
from training import selectors
from training.management.commands._common import fmt_ci, get_snapshot
from training.models import LearningCurve
from training.runs import learning_curves


class Command(ServiceCommand):
    help = (
        "A snapshot's learning curve: eval rho at 10%%..100%% of its rankings (whole tasks "
        "drawn, several draws), the fitted curve, and what 100 and 500 more rankings would "
        "add. Computed here when not stored (or --recompute); --queue leaves it to a worker."
    )

    def add_arguments(self, parser):
        parser.add_argument("snapshot", nargs="?", type=int, help="Default: the latest.")
        parser.add_argument("--json", action="store_true", help="The stored curve as JSON.")
        parser.add_argument("--draws", type=int, default=3, help="Draws per share (2-20).")
        parser.add_argument("--recompute", action="store_true", help="Replace a stored one.")
        parser.add_argument(
            "--queue", action="store_true", help="Queue it on the default queue and return."
        )

    def handle(self, *args, snapshot, draws, recompute, queue, **options):
        latest = selectors.latest_snapshot  # a command: the installation's
        snap = get_snapshot(snapshot) if snapshot is not None else latest(SYSTEM)
        if snap is None:
            raise CommandError("there is no snapshot yet")
        if queue:
            curve = learning_curves.request(snap, draws=draws, recompute=recompute)
            if curve.status == LearningCurve.Status.QUEUED:
                self.stdout.write(f"learning curve of snapshot {snap.pk} queued")
                return
        else:
            curve = learning_curves.compute(snap, draws=draws, recompute=recompute)
        if options["json"]:
            self.stdout.write(json.dumps(_as_json(curve), indent=2))
        else:
            self._table(curve)

    def _table(self, curve: LearningCurve) -> None:
        out, fit = self.stdout, curve.fit
        out.write(
            f"snapshot {curve.snapshot_id}: {curve.n_rankings} rankings in {curve.n_tasks} tasks, "
            f"{curve.draws} draws, recipe {curve.recipe}"
        )
        out.write(f"  {'share':>6} {'rankings':>8} {'eval rho by draw'}")
        by_share: dict[float, list] = {}
        for p in curve.points:
            by_share.setdefault(round(p["share"], 3), []).append(p)
        for share, points in sorted(by_share.items()):
            rhos = "  ".join("-" if p["rho"] is None else f"{p['rho']:.3f}" for p in points)
            out.write(f"  {share:>6.2f} {points[0]['rankings']:>8} {rhos}")
        ci = fit["intervals"] or {}
        out.write(
            f"fit: rho(s) = {fit['a']:.3f} - {fit['b']:.3f} s^-{fit['c']:.3f}; "
            f"now {fmt_ci(fit['rho_now'], ci.get('rho_now'))}, "
            f"at 2x {fmt_ci(fit['rho_2x'], ci.get('rho_2x'))}"
        )
        out.write(learning_curves.summary(curve, 100))
        out.write(learning_curves.summary(curve, 500))
        if fit["stops_paying"]:
            out.write(f"more rankings stop paying: doubling adds under {fit['threshold']}")


def _as_json(curve: LearningCurve) -> dict:
    return {
        "snapshot": curve.snapshot_id,
        "status": curve.status,
        "draws": curve.draws,
        "recipe": curve.recipe,
        "encoder": curve.encoder,
        "n_rankings": curve.n_rankings,
        "n_tasks": curve.n_tasks,
        "points": curve.points,
        "fit": curve.fit,
        "summary": learning_curves.summary(curve),
    }
