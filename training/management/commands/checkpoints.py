from annotation.access.scope import SYSTEM
from core.commands import ServiceCommand
from training import selectors
from training.management.commands._common import fmt_rho


class Command(ServiceCommand):
    help = "List the registry's versions with their eval rho (95% interval) and status."

    def handle(self, *args, **options):
        rows = selectors.lineage(SYSTEM, oldest_first=True)  # a command: the installation's
        self.stdout.write(
            f"{'version':>7}  {'status':<9}  {'rho [95% CI]':<24}  {'snapshot':>8}  "
            f"{'parent':>6}  encoder"
        )
        for c in rows:
            parent = f"v{c.parent.version}" if c.parent else "-"
            snapshot = c.snapshot_id or "-"
            self.stdout.write(
                f"{'v' + str(c.version):>7}  {c.status:<9}  {fmt_rho(c.metrics):<24}  "
                f"{snapshot:>8}  {parent:>6}  {c.encoder_name}"
            )
