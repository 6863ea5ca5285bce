import json

from django.conf import settings
from django.core.management.base import CommandError

from annotation.quality import standing
from annotation.studies import lifecycle as studies
from core.commands import ServiceCommand
from core.small_groups import hidden_note


def fmt(estimate: dict | None) -> str:
    """``0.824 [0.784, 0.860]``, or ``-`` when undefined."""
    if not estimate or estimate.get("value") is None:
        return "-"
    out = f"{estimate['value']:.3f}"
    if estimate.get("ci_low") is not None:
        out += f" [{estimate['ci_low']:.3f}, {estimate['ci_high']:.3f}]"
    return out


def score_lines(scores: dict | None) -> list[str]:
    """The Bradley-Terry fit against the counting score (none for a strict-rank study)."""
    if scores is None:
        return []
    return [
        f"Item scores: a Bradley-Terry fit over the answers' pairs against the counting "
        f"score the labels use, Spearman {num(scores['spearman_fit_vs_counting'], '.3f')} "
        f"over {scores['items']} items answered twice or more"
    ]


def time_line(time: dict) -> str:
    """The time on task in one line (``report.time_on_task``)."""
    if not time["rankings_timed"]:
        return "no ranking has a time"
    return (
        f"{time['rankings_timed']} rankings timed, median {time['median_seconds']:.1f} s, "
        f"{time['annotator_minutes']:.1f} annotator-minutes, "
        f"{time['rankings_per_minute']:.2f} rankings per minute"
    )


def num(value, spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec)


class Command(ServiceCommand):
    help = (
        "Annotation quality: agreement (Kendall's W, Krippendorff's alpha, with task-bootstrap "
        "intervals) overall, per occupation and per demographic group, position bias, and "
        "the annotator table. --apply-policy re-applies the exclusion rule first."
    )

    def add_arguments(self, parser):
        parser.add_argument("--study", metavar="SLUG", help="the study (default: the default one)")
        parser.add_argument("--json", action="store_true", help="the report as JSON")
        parser.add_argument("--include-synthetic", action="store_true")
        parser.add_argument(
            "--n-boot", type=int, default=settings.STEREORANK["QUALITY_N_BOOT"], metavar="N"
        )
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument(
            "--apply-policy",
            action="store_true",
            help="re-apply the quality policy to every annotator (changes are recorded)",
        )

    def handle(self, *args, include_synthetic, n_boot, seed, **options):
        from annotation.quality.report import quality_report  # scipy: only when run

        if n_boot < 0:
            raise CommandError("--n-boot must be 0 or more")
        study = studies.resolve(options["study"])
        if options["apply_policy"]:
            for change in standing.apply_policy_to_all(include_synthetic=True):
                self.stderr.write(
                    f"annotator {change.annotator_id}: {change.previous} -> {change.status} "
                    f"({change.reason})"
                )
        report = quality_report(include_synthetic, n_boot=n_boot, seed=seed, study=study)
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2))
            return
        self.stdout.write("\n".join(self.lines(report)))

    def lines(self, report: dict) -> list[str]:
        agreement = report["agreement"]
        overall = agreement["overall"]
        who = "synthetic included" if report["include_synthetic"] else "real annotators"
        out = [
            f"Quality of {report['n_rankings']} rankings that count ({who}; "
            f"{report['n_boot']} bootstrap draws, 95% intervals)",
            "",
            f"Agreement on {overall['n_tasks']} tasks ranked by 2+ annotators "
            f"({overall['n_rankings']} rankings, {overall['n_annotators']} annotators):",
            f"  Kendall's W        {fmt(overall['kendall_w'])}",
            f"  alpha (ordinal)    {fmt(overall['alpha_ordinal'])}",
            f"  alpha (interval)   {fmt(overall['alpha_interval'])}",
            f"  split-half (S-B)   {fmt(report['split_half'])}",
            "",
            f"Time on task ({report['question_format']}): " + time_line(report["time_on_task"]),
            *score_lines(report["item_scores"]),
            "",
            "Per occupation:              tasks  W                      alpha (ordinal)",
        ]
        for name, a in agreement["per_occupation"].items():
            if a["n_tasks"]:
                out.append(
                    f"  {name:<26} {a['n_tasks']:>5}  {fmt(a['kendall_w']):<22} "
                    f"{fmt(a['alpha_ordinal'])}"
                )
        out += ["", f"Groups (those of fewer than {agreement['k']} annotators hidden):"]
        for field, groups in agreement["within_groups"].items():
            out.append(f"  {field}:")
            for group, a in groups.items():
                out.append(f"    {group:<24} W {fmt(a['kendall_w'])}")
            hidden = hidden_note(agreement["hidden_groups"].get(field, 0), agreement["k"])
            if hidden:
                out.append(f"    ({hidden})")
            between = agreement["between_groups"][field]["agreement"]
            out.append(f"    between groups           W {fmt(between['kendall_w'])}")
        out += ["", "Position bias (shown vs submitted order):"]
        for k, b in report["position_bias"].items():
            out.append(
                f"  K={k}: {b['n_rankings']} rankings; chi2 {b['chi2']:.1f} (df {b['df']}), "
                f"p {b['p_value']:.3g}; untouched {b['n_untouched']} "
                f"({b['untouched_rate']:.1%}, expected {b['untouched_expected']:.2%}), "
                f"p {b['untouched_p_value']:.3g}; mean tau {fmt(b['mean_tau'])}"
            )
        out += [
            "",
            "Annotators:        tasks gold  score checks pass   rho    median s untouched status",
        ]
        for r in report["annotators"]:
            out.append(
                f"  {r['pseudonym']:<16} {r['tasks']:>5} {r['gold_tasks']:>4} "
                f"{num(r['gold_score']):>6} {r['checks']:>6} {num(r['check_pass_rate']):>5} "
                f"{num(r['consensus_rho']):>6} {num(r['median_seconds'], '.1f'):>10} "
                f"{num(r['untouched_rate']):>9} {r['status']}"
            )
        return out
