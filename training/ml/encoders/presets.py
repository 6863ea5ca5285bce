"""How a copy becomes int8: onnxruntime's dynamic presets per CPU, the layers kept fp32,
and OpenVINO's calibration texts (the presets ``training.ml.encoders.exported`` applies).

The optional packages (``pip install 'stereorank[quant]'``) are imported through
``need``, which names the extra when one is missing.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from training.ml.encoders.identity import EncoderError

EXTRA = "pip install 'stereorank[quant]'"


def need(module: str):
    """``module`` imported, or an ``EncoderError`` naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise EncoderError(f"exported encoders need {module.split('.')[0]}: {EXTRA}") from exc


def onnx_int8_preset(flags: set[str], machine: str) -> str:
    """sentence-transformers' int8 preset for a CPU, from its flags and architecture.

    ``avx512_vnni`` where VNNI is there (u8 x s8 products accumulate in int32, full
    8-bit range), else ``avx512`` or ``avx2``; ``arm64`` on ARM.
    """
    if machine.lower() in ("arm64", "aarch64"):
        return "arm64"
    if "avx512_vnni" in flags:
        return "avx512_vnni"
    if "avx512f" in flags:
        return "avx512"
    if "avx2" in flags:
        return "avx2"
    raise EncoderError(f"no int8 preset for this CPU ({machine}, no AVX2): use quantization none")


def onnx_int8_options(preset: str) -> dict:
    """``quantize_dynamic`` arguments of a preset, as optimum's ``AutoQuantizationConfig``
    makes them for sentence-transformers (dynamic, default arguments).

    All presets: per-channel symmetric int8 weights, dynamic asymmetric uint8
    activations, every operator onnxruntime quantizes dynamically. One change:
    without VNNI, x86 multiplies u8 x s8 into saturating int16 pairs, so there
    weights keep 7 bits (``reduce_range``, onnxruntime's advice for per-channel
    on non-VNNI CPUs; optimum leaves it off).
    """
    if preset not in ("arm64", "avx2", "avx512", "avx512_vnni"):
        raise EncoderError(f"unknown int8 preset {preset!r}")
    return {
        "per_channel": True,
        "reduce_range": preset in ("avx2", "avx512"),
        "extra_options": {"WeightSymmetric": True, "ActivationSymmetric": False},
    }


def down_projections(path: Path) -> list[str]:
    """The MatMul nodes of the graph at ``path`` that project a wider input down to a
    narrower output (constant weight ``[in, out]``, ``in > out``): a transformer's
    feed-forward output layers.

    Their input, after GELU, carries the outlier features that one uint8 scale per
    tensor cannot hold (Bondarenko et al., 2021, "Understanding and overcoming the
    challenges of efficient transformer quantization"); ONNX int8 keeps them fp32.
    Measured on 64 prompts (cosine to fp32, mean / min): all-mpnet-base-v2 0.903 /
    0.885 with them quantized, 0.994 / 0.991 without; MiniLM 0.994 / 0.991 and
    0.997 / 0.995.
    """
    onnx = need("onnx")
    graph = onnx.load(str(path), load_external_data=False).graph
    shapes = {t.name: list(t.dims) for t in graph.initializer}
    return [
        n.name
        for n in graph.node
        if n.op_type == "MatMul"
        and len(shapes.get(n.input[1], [])) == 2
        and shapes[n.input[1]][0] > shapes[n.input[1]][1]
    ]


def cpu_flags() -> set[str]:
    """This CPU's feature flags (Linux ``/proc/cpuinfo``; empty elsewhere)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            return set(line.split(":", 1)[1].split())
    return set()


def default_calibration_texts(n: int = 300) -> list[str]:
    """``n`` prompt-like texts spread over the synthetic catalogue (deterministic, offline);
    one in ten joins 32, 16, 8, 4 or 2 prompts, so that static int8 ranges also cover
    the positions of long inputs up to the max length."""
    from training.ml.synthetic import synthetic_examples

    texts = sorted({e.text for e in synthetic_examples(prompts_per_type=6, variants=9, seed=0)})
    picked = texts[:: max(1, len(texts) // n)][:n]
    for j, i in enumerate(range(0, len(picked), 10)):
        k = (32, 16, 8, 4, 2)[j % 5]
        picked[i] = ". ".join(texts[(i * 31 + m * 97) % len(texts)] for m in range(k))
    return picked
