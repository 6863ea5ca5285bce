"""ONNX and OpenVINO copies of an encoder, fp32 or int8, exported once into the model directory.

Export, offline, from the local weights (``pip install 'stereorank[quant]'``):
torch.onnx's exporter traces the whole SentenceTransformer forward (transformer,
pooling, normalisation) into one graph, token ids -> sentence embedding; then

- ``onnx/none``: that graph;
- ``onnx/int8``: onnxruntime's dynamic quantization with sentence-transformers'
  preset for this CPU (``presets.onnx_int8_preset``), the feed-forward down projections
  kept fp32 (``presets.down_projections``);
- ``openvino/none``: the graph converted by OpenVINO, weights kept fp32;
- ``openvino/int8``: NNCF post-training static quantization (what
  ``export_static_quantized_openvino_model`` runs) calibrated on local texts,
  by default ``presets.default_calibration_texts`` (prompt-like, deterministic): no hub.

sentence-transformers' own ``backend="onnx"|"openvino"`` loaders need optimum,
whose releases pin transformers below the 5.x this project runs on, so the
export and the runtime here use onnxruntime, OpenVINO and NNCF directly.

The traced fp32 graph is kept beside the copies (``<name>--fp32-graph-<digest>.onnx``,
keyed by the origin's identity key, its modules' configuration and the versions of torch
and the exporters, written atomically), so the four
copies of one encoder trace it once, not four times (about 10 s each on two cores).

The folder ``<name>--<backend>-<quantization>-<weight sha[:12]>`` holds the
graph, the tokenizer and ``export.json`` (origin identity, preset, calibration,
file hashes). It is built in a temporary folder and renamed into place, so a
killed export leaves nothing a later load would trust, and a folder another
process finished first is kept. Loading checks the origin weights and the
exported files against ``export.json``. Encoding tokenizes as SentenceTransformer
does (padding to the longest, truncation at the max length) in batches sorted by
length; OpenVINO is compiled at f32 inference precision (its default on CPUs
with AMX or AVX512-BF16 is bf16, which would make ``none`` not fp32).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import shutil
import tempfile
import threading
import warnings
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np

from training.ml.encoders.encoder import Encoder
from training.ml.encoders.identity import (
    EncoderError,
    EncoderHashMismatch,
    EncoderIdentity,
    check_backend,
    sha256_file,
)
from training.ml.encoders.presets import (
    cpu_flags,
    default_calibration_texts,
    down_projections,
    need,
    onnx_int8_options,
    onnx_int8_preset,
)
from training.ml.encoders.resolve import weights_sha256

MANIFEST = "export.json"
FORMAT = "stereorank-exported-encoder/1"
ARTIFACTS = {"onnx": ("model.onnx",), "openvino": ("openvino_model.xml", "openvino_model.bin")}


def _versions() -> dict:
    out = {}
    exporters = ("onnxruntime", "onnxscript", "openvino", "nncf")
    for dist in ("torch", "transformers", "sentence-transformers", *exporters):
        with contextlib.suppress(PackageNotFoundError):
            out[dist] = version(dist)
    return out


def artifact_sha256(folder: Path, backend: str) -> str:
    """One hash over the exported graph files of ``backend`` in ``folder``."""
    files = {f: sha256_file(folder / f) for f in ARTIFACTS[backend]}
    return hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()


def _label(name: str) -> str:
    """An encoder's name as a file name: a folder's own name, or a hub id with ``--``."""
    return Path(name).name if Path(name).is_absolute() else name.replace("/", "--")


def export_folder_name(name: str, backend: str, quantization: str, weight_sha: str) -> str:
    return f"{_label(name)}--{backend}-{quantization}-{weight_sha[:12]}"


def _export_onnx(model, path: Path) -> list[str]:
    """The SentenceTransformer's forward as one ONNX graph at ``path``; its input names."""
    import torch

    need("onnxscript")
    features = model.preprocess(["a nurse", "a photo of a chef at work in a busy kitchen"])
    names = [k for k, v in features.items() if isinstance(v, torch.Tensor)]

    class Forward(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *tensors):
            feats = {**dict(zip(names, tensors, strict=True)), "modality": "text"}
            return self.model(feats)["sentence_embedding"]

    batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq")
    with torch.no_grad(), warnings.catch_warnings():
        # The exporter's own notices about its internals, nothing about this model.
        warnings.filterwarnings("ignore", message=r"# The axis name: ")
        warnings.filterwarnings("ignore", message=r"`isinstance\(treespec, LeafSpec\)`")
        torch.onnx.export(
            Forward().eval(),
            tuple(features[k] for k in names),
            str(path),
            input_names=names,
            output_names=["sentence_embedding"],
            dynamic_shapes=(tuple({0: batch, 1: seq} for _ in names),),
            dynamo=True,
            external_data=False,
            verbose=False,
        )
    return names


def _traced(model, ident: EncoderIdentity, folder: Path, path: Path) -> list[str]:
    """The fp32 graph of ``model`` at ``path`` and its input names: a copy of the one kept
    in ``folder`` for this origin, its modules and these library versions, traced (and
    kept) if there is none."""
    # What the trace depends on: the origin, its modules' configuration (the
    # SentenceTransformer's repr names each module with its settings) and the libraries.
    source = json.dumps([ident.key, repr(model), _versions()], sort_keys=True)
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    kept = folder / f"{_label(ident.name)}--fp32-graph-{digest}.onnx"
    inputs = kept.with_suffix(".json")
    if kept.is_file() and inputs.is_file():
        shutil.copyfile(kept, path)
        return json.loads(inputs.read_text())
    names = _export_onnx(model, path)
    # Staged in this export's own work folder, then renamed into place: the inputs first,
    # so a graph in place always has them (a reader that finds either missing traces anew).
    (path.parent / "inputs.json").write_text(json.dumps(names))
    os.replace(path.parent / "inputs.json", inputs)
    shutil.copyfile(path, path.parent / "kept.onnx")
    os.replace(path.parent / "kept.onnx", kept)
    return names


def _calibration_items(tokenizer, texts: Sequence[str], names: list[str], max_len: int):
    return [
        {k: v.astype(np.int64) for k, v in _tokenize(tokenizer, [t], max_len).items() if k in names}
        for t in texts
    ]


def _tokenize(tokenizer, texts: list[str], max_len: int) -> dict:
    return dict(
        tokenizer(
            texts,
            padding=True,
            truncation="longest_first",
            max_length=max_len,
            return_tensors="np",
        )
    )


def _build(origin: Encoder, out: Path, backend: str, quantization: str, calibration) -> dict:
    """Write the graph, tokenizer and manifest fields of one export into ``out``."""
    model, ident = origin.model, origin.identity
    if getattr(model[0], "do_lower_case", False):
        raise EncoderError(f"{ident.name} lower-cases its input: not supported for export")
    out.mkdir()
    model.tokenizer.save_pretrained(str(out))
    fp32 = out.parent / "fp32.onnx"
    names = _traced(model, ident, out.parent.parent, fp32)
    info: dict = {"inputs": names, "preset": None, "calibration": None}
    if backend == "onnx" and quantization == "none":
        os.replace(fp32, out / "model.onnx")
    elif backend == "onnx":
        quantization_mod = need("onnxruntime.quantization")
        preset = onnx_int8_preset(cpu_flags(), platform.machine())
        kept = down_projections(fp32)
        quantization_mod.quantize_dynamic(
            str(fp32),
            str(out / "model.onnx"),
            weight_type=quantization_mod.QuantType.QInt8,
            nodes_to_exclude=kept,
            **onnx_int8_options(preset),
        )
        info["preset"] = {"name": preset, **onnx_int8_options(preset), "fp32_nodes": kept}
    else:
        ov = need("openvino")
        graph = ov.convert_model(str(fp32))
        if quantization == "int8":
            nncf = need("nncf")
            texts = list(calibration or default_calibration_texts())
            if not texts:
                raise EncoderError("OpenVINO int8 needs calibration texts; none were given")
            items = _calibration_items(model.tokenizer, texts, names, ident.max_seq_length)
            graph = nncf.quantize(
                graph,
                nncf.Dataset(items),
                model_type=nncf.ModelType.TRANSFORMER,
                subset_size=len(items),
            )
            digest = hashlib.sha256("\0".join(texts).encode()).hexdigest()
            info["calibration"] = {"texts": len(texts), "sha256": digest}
            info["preset"] = {"name": "nncf-transformer-static"}
        ov.save_model(graph, str(out / "openvino_model.xml"), compress_to_fp16=False)
    return info


def export(
    origin: Encoder,
    target: Path,
    backend: str,
    quantization: str,
    calibration_texts: Sequence[str] | None = None,
) -> Path:
    """Export ``origin`` (a torch fp32 encoder) to ``target`` atomically; return ``target``."""
    check_backend(backend, quantization)
    if backend == "torch" or origin.identity.exported:
        raise EncoderError("export takes a torch fp32 encoder to the onnx or openvino backend")
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        out = work / "export"
        info = _build(origin, out, backend, quantization, calibration_texts)
        manifest = {
            "format": FORMAT,
            "backend": backend,
            "quantization": quantization,
            "origin": origin.identity.to_dict(),
            "artifact_sha256": artifact_sha256(out, backend),
            "versions": _versions(),
            **info,
        }
        (out / MANIFEST).write_text(json.dumps(manifest, indent=2))
        try:
            os.rename(out, target)
        except OSError:
            if not (target / MANIFEST).is_file():
                raise
        return target
    finally:
        shutil.rmtree(work, ignore_errors=True)


class ExportedEncoder(Encoder):
    """An exported encoder run by onnxruntime or OpenVINO on the CPU; ``model`` is None."""

    def __init__(self, folder: Path, manifest: dict, identity: EncoderIdentity) -> None:
        super().__init__(None, identity, "cpu")
        transformers = need("transformers")
        self.folder = folder
        self.inputs = list(manifest["inputs"])
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(
            str(folder), local_files_only=True
        )
        if identity.backend == "onnx":
            ort = need("onnxruntime")
            session = ort.InferenceSession(
                str(folder / "model.onnx"), providers=["CPUExecutionProvider"]
            )
            self._run = lambda feeds: session.run(None, feeds)[0]
        else:
            ov = need("openvino")
            compiled = ov.Core().compile_model(
                str(folder / "openvino_model.xml"), "CPU", {"INFERENCE_PRECISION_HINT": "f32"}
            )
            local = threading.local()  # an infer request serves one call at a time

            def run(feeds: dict) -> np.ndarray:
                if not hasattr(local, "request"):
                    local.request = compiled.create_infer_request()
                return np.array(local.request.infer(feeds)[0], copy=True)

            self._run = run

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Embeddings ``[n, dim]`` float32, batched longest first as SentenceTransformer does."""
        texts = list(texts)
        self.encode_calls += 1
        self.texts_encoded += len(texts)
        out = np.zeros((len(texts), self.identity.dim), dtype=np.float32)
        order = np.argsort([-len(t) for t in texts], kind="stable")
        for start in range(0, len(texts), batch_size):
            idx = order[start : start + batch_size]
            batch = [texts[i] for i in idx]
            tokens = _tokenize(self.tokenizer, batch, self.identity.max_seq_length)
            out[idx] = self._run({k: tokens[k].astype(np.int64) for k in self.inputs})
        return out


def open_exported(folder: Path, name: str, weight_sha: str) -> ExportedEncoder:
    """Load an export, checking it was made from ``weight_sha`` and is intact."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
        origin = EncoderIdentity.from_dict(manifest["origin"])
        backend, quantization = manifest["backend"], manifest["quantization"]
        check_backend(backend, quantization)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise EncoderHashMismatch(
            f"{folder}/{MANIFEST} is unreadable ({exc}); remove the folder to export again"
        ) from exc
    if origin.weight_sha256 != weight_sha:
        raise EncoderHashMismatch(
            f"{folder} was exported from weights {origin.weight_sha256[:12]}, not {weight_sha[:12]}"
        )
    actual = artifact_sha256(folder, backend)
    if actual != manifest.get("artifact_sha256"):
        raise EncoderHashMismatch(
            f"the exported files in {folder} do not match its {MANIFEST}; remove the folder "
            "to export again"
        )
    identity = EncoderIdentity(
        name=name,
        revision=origin.revision,
        weight_sha256=origin.weight_sha256,
        dim=origin.dim,
        max_seq_length=origin.max_seq_length,
        normalize=origin.normalize,
        backend=backend,
        quantization=quantization,
        artifact_sha256=actual,
    )
    return ExportedEncoder(folder, manifest, identity)


def load_exported(
    name: str,
    folder: Path,
    model_dir: Path | None,
    backend: str,
    quantization: str,
    origin: Callable[[], Encoder],
    calibration_texts: Sequence[str] | None = None,
) -> ExportedEncoder:
    """The ``backend``/``quantization`` copy of the encoder in ``folder``, exported on first use
    from ``origin()`` (the torch encoder, loaded only then) into ``model_dir``."""
    if model_dir is None:
        raise EncoderError(f"the {backend} backend is exported into a model directory: pass one")
    weight_sha = weights_sha256(name, folder)
    target = Path(model_dir) / export_folder_name(name, backend, quantization, weight_sha)
    if not (target / MANIFEST).is_file():
        export(origin(), target, backend, quantization, calibration_texts)
    return open_exported(target, name, weight_sha)
