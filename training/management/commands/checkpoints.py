from annotation.access.scope import SYSTEM
from core.commands import ServiceCommand
from training import selectors
from training.management.commands._common import fmt_rho


def flag_figures(flag: dict) -> str:
    """``0.83 / 0.71 / 0.77`` (n/a for an undefined one), ``*`` when the threshold is the
    seed's 0.12 because calibration fell back."""
    cells = [
        "n/a" if flag.get(k) is None else f"{flag[k]:.2f}" for k in ("precision", "recall", "f1")
    ]
    return " / ".join(cells) + ("*" if flag.get("calibration") == "seed-default" else "")


class Command(ServiceCommand):
    help = (
        "List the registry's versions: status, eval rho (95% interval), the flag's precision, "
        "recall and F1 on the eval split (* when the threshold fell back to the seed's 0.12), "
        "snapshot, parent, group heads and encoder (the registry page and the card give the "
        "intervals)."
    )

    def handle(self, *args, **options):
        rows = selectors.lineage(SYSTEM, oldest_first=True)  # a command: the installation's
        self.stdout.write(
            f"{'version':>7}  {'status':<9}  {'rho [95% CI]':<24}  {'flag P / R / F1':<18}  "
            f"{'snapshot':>8}  "
            f"{'parent':>6}  {'group heads':<16}  encoder"
        )
        for c in rows:
            parent = f"v{c.parent.version}" if c.parent else "-"
            snapshot = c.snapshot_id or "-"
            flag = (c.metrics or {}).get("flag")
            flag = flag_figures(flag) if flag else "-"
            heads = (c.metrics or {}).get("group_heads")
            groups = f"{heads['field']} ({len(heads['groups'])})" if heads else "-"
            self.stdout.write(
                f"{'v' + str(c.version):>7}  {c.status:<9}  {fmt_rho(c.metrics):<24}  "
                f"{flag:<18}  {snapshot:>8}  {parent:>6}  {groups:<16}  {c.encoder_name}"
            )
