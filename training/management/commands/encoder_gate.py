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
            f"{m['max_rho_drift']}; {m['flips']} of {m['flip_n']} gate-set flags flipped, the "
            f"rate's 95% upper bound {m['flip_upper']:.2%} <= {m['max_flip_share']:.2%}; the "
            f"copy's threshold {m['copy_threshold']:.4f} (fp32's {m['threshold']:.4f}), "
            f"calibrated on {m['calibrated_on']} training prompts)"
        )
        near = m["near_threshold"]
        agree = m["flag_agreement"]
        self.stdout.write(
            f"flags agree with fp32's on {agree['gate_set']:.1%} of the gate set (v"
            f"{m['gate_set_version']}) and {agree['catalogue']:.1%} of the catalogue; near the "
            f"threshold (within {near['within']:.4f}): {near['flips']} of {near['n']} flipped, "
            f"{near['expected_flip_rate']:.1%} expected"
        )
