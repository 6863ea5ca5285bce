import json

from core.commands import ServiceCommand
from core.small_groups import hidden_note
from training import services
from training.management.commands._common import fmt_ci, get_snapshot
from training.perspectives import export as perspective_export


class Command(ServiceCommand):
    help = (
        "A version's perspective report: per demographic group, alignment and Spearman's rho "
        "with 95%% intervals beside the human baseline (groups under k: named only). Computed "
        "here first when missing (a command may score; a web page never does)."
    )

    def add_arguments(self, parser):
        parser.add_argument("version", type=int)
        parser.add_argument("--snapshot", type=int, help="Default: the version's own snapshot.")
        parser.add_argument(
            "--field", action="append", help="A demographic field (repeat; default: all)."
        )
        out = parser.add_mutually_exclusive_group()
        out.add_argument("--json", action="store_true", help="The report as JSON.")
        out.add_argument("--csv", action="store_true", help="One CSV row per group.")

    def handle(self, *args, version, snapshot, field, **options):
        checkpoint = services.get_version(version)
        snap = services.report_snapshot(
            checkpoint, get_snapshot(snapshot) if snapshot is not None else None
        )
        fields = services.report_fields(snap, field)
        services.compute_reports(checkpoint, snap, fields)
        data = perspective_export.report(checkpoint, snap, fields)
        if options["json"]:
            self.stdout.write(json.dumps(data, indent=2))
        elif options["csv"]:
            rows = perspective_export.csv_rows(data)
            self.stdout.write(perspective_export.to_csv(rows), ending="")
        else:
            self._table(data)

    def _table(self, data: dict) -> None:
        out = self.stdout
        out.write(f"v{data['version']} on snapshot {data['snapshot']}")
        for f in data["fields"]:
            out.write("")
            out.write(
                f"{f['field']}: T = {f['temperature']}, k = {f['k']}, "
                f"{f['n_rankings']} rankings by {f['n_annotators']} annotators"
            )
            out.write(
                f"  {'group':<24} {'alignment [95% CI]':<26} {'baseline [95% CI]':<26} "
                f"{'rho [95% CI]':<26} {'annotators':>10} {'rankings':>8}"
            )
            for g in f["groups"]:
                out.write(
                    f"  {g['group']:<24} {fmt_ci(g['alignment'], g['alignment_ci']):<26} "
                    f"{fmt_ci(g['human_baseline'], g['human_baseline_ci']):<26} "
                    f"{fmt_ci(g['spearman'], g['spearman_ci']):<26} "
                    f"{g['n_annotators']:>10} {g['n_rankings']:>8}"
                )
            if f["hidden_groups"]:
                out.write(f"  {hidden_note(f['hidden_groups'], f['k'])}")
            if f["friedman"]:
                fr = f["friedman"]
                out.write(
                    f"  Friedman over {len(fr['groups'])} groups, {len(fr['occupations'])} "
                    f"occupations: chi2 = {fr['statistic']:.3f}, p = {fr['p_value']:.4f}"
                )
