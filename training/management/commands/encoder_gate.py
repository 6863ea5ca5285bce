from core.commands import ServiceCommand
from training.management.commands._common import fmt_num, get_snapshot
from training.ml.encoders.identity import BACKENDS, QUANTIZATIONS
from training.services import get_version
from training.storage.encoders import run_gate


class Command(ServiceCommand):
    help = (
        "Gate an exported encoder (exported on first use) for VERSION: its head's scores on "
        "the eval split against the fp32 encoder's (Spearman drift, flags flipped at the "
        "threshold); recorded, and exit 1 above TRAINING['QUANT_MAX_*']."
    )

    def add_arguments(self, parser):
        parser.add_argument("version", type=int)
        parser.add_argument("--backend", choices=BACKENDS[1:], default="onnx")
        parser.add_argument("--quantization", choices=QUANTIZATIONS, default="int8")
        parser.add_argument(
            "--snapshot", type=int, help="Gate on this snapshot (default: the version's own)."
        )

    def handle(self, *args, version, backend, quantization, snapshot, **options):
        snap = get_snapshot(snapshot) if snapshot is not None else None
        gate = run_gate(get_version(version), backend, quantization, snapshot=snap)
        m = gate.metrics
        self.stdout.write(
            f"v{version} {backend}/{quantization} on snapshot {gate.snapshot_id}: passed "
            f"({m['n']} prompts; rank rho {fmt_num(m['rank_rho'], 4)}; "
            f"rho {fmt_num(m['rho_fp32'], 4)} -> "
            f"{fmt_num(m['rho_quantized'], 4)}; drift {fmt_num(m['rho_drift'], 4)} <= "
            f"{m['max_rho_drift']}; {m['flips']} flags flipped ({m['flip_share']:.2%} <= "
            f"{m['max_flip_share']:.2%}) at threshold {m['threshold']:.4f})"
        )
