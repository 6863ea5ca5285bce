from core.commands import ServiceCommand
from training.management.commands._common import fmt_num, get_snapshot
from training.selectors import not_evaluated_on
from training.services import compare, evaluate, get_version


class Command(ServiceCommand):
    help = (
        "Compare two versions on one snapshot's eval split: rho of each, the paired "
        "difference with its 95% interval and p-value, per-occupation rho side by side."
    )

    def add_arguments(self, parser):
        parser.add_argument("a", type=int)
        parser.add_argument("b", type=int)
        parser.add_argument(
            "--snapshot", type=int, help="Evaluate both on this snapshot (default: newest common)."
        )

    def handle(self, *args, a, b, snapshot, **options):
        snap = get_snapshot(snapshot) if snapshot is not None else None
        va, vb = get_version(a), get_version(b)
        if snap is not None:  # a command may score here: it is not a web request
            for checkpoint in not_evaluated_on(snap, va, vb):
                evaluate(checkpoint, snap)
        r = compare(va, vb, snapshot=snap)
        ci = r["ci"]
        out = self.stdout
        out.write(f"snapshot {r['snapshot']}, {r['n_items']} eval items")
        out.write(f"v{a}: rho {fmt_num(r['rho_a'])}")
        out.write(f"v{b}: rho {fmt_num(r['rho_b'])}")
        interval = f"[{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else "-"
        out.write(
            f"diff (v{a} - v{b}): {r['diff']:+.3f}, 95% CI {interval}, p = {r['p_value']:.4f}"
        )
        occ_a, occ_b = r["per_occupation_a"], r["per_occupation_b"]
        out.write(f"{'occupation':<30} {'v' + str(a):>8} {'v' + str(b):>8}")
        for occ in sorted(set(occ_a) | set(occ_b)):
            out.write(f"{occ:<30} {fmt_num(occ_a.get(occ)):>8} {fmt_num(occ_b.get(occ)):>8}")
