"""int8 serving, end to end in one run: raw encode and ``/api/score/``, fp32 against the gated int8
copies, with the gate's figures (drift, its bootstrap interval, flips) beside them.

1. A throwaway SQLite database and folders (the exports in ``var/models``, kept): a study
   at the seed's scale, 1,200 items of 1,200 distinct prompts: the catalogue's 40
   occupations x 3 original prompts, each with ``--variants`` - 1 paraphrase prompts
   (``training.ml.synthetic``'s wordings: other people, other details) and one
   placeholder image per prompt; 200 tasks of 6 ranked by synthetic annotators; its
   snapshot (960 train / 240 eval items, split by original prompt, so 240 distinct
   eval prompts); one run on ``--encoder`` (all-mpnet-base-v2 by default; 3 epochs at
   lr 1e-2), promoted; its threshold calibrated on its fp32 eval scores.
2. The accuracy gate (``manage.py encoder_gate``'s ``run_gate``) of ONNX int8 and OpenVINO
   int8 for that version on its snapshot's eval split at the settings' tolerances, with
   a 95% bootstrap interval of the drift over the split's distinct prompts
   (``gate.drift_interval``).
3. Raw encode: ``--texts`` distinct new prompts, batch 64, by SentenceTransformer (fp32)
   and by each int8 copy (``ExportedEncoder.encode``); each repeat times every variant in
   turn, so a noisy machine slows them alike.
4. ``/api/score/`` through the Django test client (token auth, the whole DRF stack and
   the scorer), the deployment set to fp32 and to each gated int8 copy
   (``STEREORANK_SCORING_ENCODER_*``): ``--requests`` requests of ``--batch`` prompts never
   seen before (each encoded and written to the cache), per repeat, in turn.

Printed: one table, prompts/s (median over repeats) and the median per-repeat ratios: to
fp32 raw and through the API, and the API's to fp32 raw encode (the issue's aim: int8
served at 2.5x raw fp32 encode or better), beside the gate's drift and flips; the load
average per repeat and the spread of the ratios over the repeats.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/int8_serving.py
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, arguments, load, migrate

sys.path.insert(0, str(ROOT))

COPIES = [("onnx", "int8"), ("openvino", "int8")]


def novel(n: int, tag: str) -> list[str]:
    """``n`` prompt-like texts that no earlier step has seen (``tag`` keeps sets apart)."""
    from annotation.catalogue.loading import read_catalogue

    occupations = [o["name"] for o in read_catalogue()["occupations"]]
    looks = ["candid", "studio", "documentary", "cinematic", "close-up", "wide-angle"]
    places = ["at work", "in a busy city", "at home", "outdoors at dawn", "in an office"]
    return [
        f"A {looks[i % len(looks)]} photo of a {occupations[i % len(occupations)]} "
        f"{places[i % len(places)]}, scene {tag}-{i}"
        for i in range(n)
    ]


def paraphrase_prompts(variants: int) -> int:
    """``variants`` - 1 paraphrase prompts of each original, one placeholder image each
    (the i-th catalogue occupation takes the i-th synthetic one's wordings)."""
    from annotation.catalogue.loading import _ensure_placeholders
    from annotation.models import Prompt
    from annotation.studies import lifecycle as studies
    from training.ml.synthetic import synthetic_examples

    originals = list(Prompt.objects.filter(origin=None).select_related("occupation"))
    occupations = sorted({p.occupation.name for p in originals})
    wordings: dict[tuple[str, str], list[str]] = {}
    for e in synthetic_examples(len(occupations), max(variants - 1, 1), variants=1, seed=0):
        wordings.setdefault((e.occupation, e.prompt_type), []).append(e.text)
    synthetic = list(dict.fromkeys(o for o, _ in wordings))
    made = 0
    for prompt in originals:
        theirs = synthetic[occupations.index(prompt.occupation.name)]
        for text in wordings[(theirs, prompt.prompt_type)][: variants - 1]:
            mine = text.replace(f" a {theirs}", f" a {prompt.occupation.name}")
            paraphrase = Prompt.objects.create(
                occupation=prompt.occupation,
                prompt_type=prompt.prompt_type,
                origin=prompt,
                text=mine,
            )
            made += _ensure_placeholders(studies.default_study(), paraphrase, 1)
    return made


def setup(encoder: str, occupations: int, variants: int):
    """The seed-scale study, one trained version on ``encoder``, promoted; a scoring
    user's client."""
    from django.contrib.auth import get_user_model
    from rest_framework.test import APIClient

    from annotation.accounts import tokens
    from annotation.catalogue.loading import load_catalogue, read_catalogue
    from annotation.studies.simulation import simulate
    from annotation.studies.tasks_builder import build_tasks
    from scoring import roles
    from training import services
    from training.runs.services import execute_run

    catalogue = read_catalogue()
    catalogue["occupations"] = catalogue["occupations"][:occupations]
    path = Path(os.environ["STEREORANK_VAR_DIR"]) / "catalogue.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(catalogue))
    load_catalogue(placeholders_per_prompt=1, path=path)
    paraphrase_prompts(variants)
    tasks = build_tasks(size=6, overlap=1, seed=0)
    simulate(-(-tasks // 20), 20, seed=0)
    snapshot = services.create_snapshot(include_synthetic=True, weighting="none")
    run = services.start_run(
        snapshot,
        encoder=encoder,
        epochs=3,
        hyperparameters={"lr": 1e-2, "n_boot": 200},
        enqueue=False,
    )
    execute_run(run.pk, "benchmark")
    run.refresh_from_db()
    checkpoint = run.checkpoint
    services.promote(checkpoint, actor="benchmarks/int8_serving.py")
    user = get_user_model().objects.create_user("bench-scorer", password="bench-pass-123")
    roles.grant(user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {tokens.issue(user)[1]}")
    return checkpoint, client


def serve(backend: str, quantization: str) -> None:
    """The deployment's encoder setting, as a restart with these env vars would make it."""
    from django.conf import settings

    from scoring.scorer import reset_scorer

    scoring = settings.STEREORANK["SCORING"]
    scoring.update(ENCODER_BACKEND=backend, ENCODER_QUANTIZATION=quantization)
    reset_scorer()


def api_rate(client, prompts: list[str], batch: int, expect: str) -> float:
    """Prompts/s of ``/api/score/`` over ``prompts`` in requests of ``batch``."""
    start = time.perf_counter()
    for i in range(0, len(prompts), batch):
        answer = client.post("/api/score/", {"prompts": prompts[i : i + batch]}, format="json")
        body = answer.json()
        if answer.status_code != 200:
            raise SystemExit(f"/api/score/ answered {answer.status_code}: {body}")
        served = f"{body['encoder']['backend']}/{body['encoder']['quantization']}"
        if served != expect:
            raise SystemExit(f"/api/score/ served by {served}, not {expect}")
    return len(prompts) / (time.perf_counter() - start)


def gate_copies(checkpoint, copies: list[tuple[str, str]]) -> dict:
    """Each copy gated for ``checkpoint`` (passed or refused), its figures printed with
    the drift's bootstrap interval over the eval split's distinct prompts."""
    from training.errors import QuantizationRefused
    from training.ml.encoders.gate import drift_interval
    from training.models import EncoderGate
    from training.snapshots.services import EVAL, rows_of
    from training.storage.encoders import run_gate

    texts = {r["key"]: r["text"] for r in rows_of(checkpoint.snapshot, EVAL)}
    gates = {}
    for backend, quantization in copies:
        start = time.perf_counter()
        try:
            gate = run_gate(checkpoint, backend, quantization)
        except QuantizationRefused as refused:
            print(f"gate {backend}/{quantization}: {refused}", flush=True)
            gate = EncoderGate.objects.get(checkpoint=checkpoint, backend=backend)
        m, s = gate.metrics, gate.metrics["scores"]
        groups = [texts[k] for k in s["keys"]]
        m["interval"] = drift_interval(s["fp32"], s["quantized"], s["labels"], groups)
        m["prompts"] = len(set(groups))
        gates[backend] = gate
        print(
            f"gate {backend}/{quantization}: {'passed' if gate.passed else 'refused'}, "
            f"{m['n']} items of {m['prompts']} prompts, rho {m['rho_fp32']:.4f} -> "
            f"{m['rho_quantized']:.4f}, rank rho {m['rank_rho']:.4f}, drift "
            f"{m['rho_drift']:.4f} (95% {m['interval'][0]:.4f}-{m['interval'][1]:.4f}), "
            f"flips {m['flips']} ({m['flip_share']:.1%}), max |d| {m['max_abs_diff']:.4f} "
            f"({time.perf_counter() - start:.0f} s with export; load {load()})",
            flush=True,
        )
    return gates


def spread(values: list[float]) -> str:
    return f"{min(values):.2f}-{max(values):.2f}" if values else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoder", default="all-mpnet-base-v2")
    parser.add_argument("--occupations", type=int, default=40)
    parser.add_argument("--variants", type=int, default=10, help="Prompts per original.")
    parser.add_argument("--texts", type=int, default=192, help="Raw encode texts per repeat.")
    parser.add_argument("--requests", type=int, default=3, help="API requests per repeat.")
    parser.add_argument("--batch", type=int, default=64, help="Prompts per API request.")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--backends",
        default=",".join(b for b, _ in COPIES),
        help="the int8 copies served, of " + ", ".join(b for b, _ in COPIES),
    )
    args = arguments(
        parser,
        {"encoder": "all-MiniLM-L6-v2", "occupations": 3, "variants": 2, "texts": 16,
         "requests": 1, "batch": 8, "repeats": 1, "backends": "onnx"},
    )  # fmt: skip
    chosen = [c for c in COPIES if c[0] in args.backends.split(",")]
    if not chosen or len(chosen) != len(args.backends.split(",")):
        sys.exit(f"int8_serving: --backends takes {','.join(b for b, _ in COPIES)}")

    with tempfile.TemporaryDirectory(prefix="int8-bench-") as tmp:
        folder = Path(tmp)
        os.environ.update(
            HF_HUB_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1",
            DJANGO_SETTINGS_MODULE="web.settings",
            DJANGO_SECRET_KEY="bench-secret",
            STEREORANK_VAR_DIR=str(folder / "var"),
            STEREORANK_CHECKPOINT_DIR=str(folder / "checkpoints"),
            STEREORANK_MEDIA_ROOT=str(folder / "media"),
            STEREORANK_EMBEDDING_CACHE=str(folder / "embeddings"),
            STEREORANK_MODEL_DIR=os.environ.get(
                "STEREORANK_MODEL_DIR", str(ROOT / "var" / "models")
            ),
            STEREORANK_DEVICE="cpu",
            STEREORANK_THROTTLE_SCORING="1000000/min",
            STEREORANK_EMBEDDED="true",
            CELERY_TASK_ALWAYS_EAGER="true",
            DJANGO_DEBUG="false",
            DJANGO_SECURE_SSL_REDIRECT="false",
            LOG_LEVEL="WARNING",
        )
        os.environ.pop("DATABASE_URL", None)
        import django

        django.setup()
        from django.conf import settings

        settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]  # the test client's
        migrate()
        import torch

        print(
            f"date {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs, torch threads "
            f"{torch.get_num_threads()}, load {load()}",
            flush=True,
        )
        from training.storage import encoders

        start = time.perf_counter()
        checkpoint, client = setup(args.encoder, args.occupations, args.variants)
        print(
            f"v{checkpoint.version} on {args.encoder}: rho {checkpoint.metrics['spearman']:.3f}, "
            f"threshold {checkpoint.threshold:.4f}, snapshot {checkpoint.snapshot.train_count} "
            f"train / {checkpoint.snapshot.eval_count} eval ({time.perf_counter() - start:.0f} s)",
            flush=True,
        )
        gates = gate_copies(checkpoint, chosen)

        fp32 = encoders.encoder(args.encoder, device="cpu")
        copies = {b: encoders.encoder(args.encoder, backend=b, quantization=q) for b, q in chosen}
        variants = [("torch", "none", fp32)] + [(b, q, copies[b]) for b, q in chosen]
        raw = {b: [] for b, _, _ in variants}
        api = {b: [] for b, _, _ in variants}
        loads = []
        n_api = args.requests * args.batch
        for r in range(args.repeats):
            texts = novel(args.texts, f"raw{r}")
            for backend, _, enc in variants:
                enc.encode(texts[:8])  # warm (threads, allocator) outside the clock
                start = time.perf_counter()
                enc.encode(texts, batch_size=64)
                raw[backend].append(len(texts) / (time.perf_counter() - start))
            for backend, quantization, _ in variants:
                if backend != "torch" and not gates[backend].passed:
                    continue
                serve(backend, quantization)
                prompts = novel(n_api, f"api{r}-{backend}")
                api[backend].append(
                    api_rate(client, prompts, args.batch, f"{backend}/{quantization}")
                )
            loads.append(load())
            print(
                f"repeat {r + 1}: load {loads[-1]}; raw "
                + ", ".join(f"{b} {raw[b][-1]:.1f}/s" for b, _, _ in variants)
                + "; api "
                + ", ".join(f"{b} {api[b][-1]:.1f}/s" for b, _, _ in variants if api[b]),
                flush=True,
            )

        def ratios(series: dict, backend: str, base: dict) -> list[float]:
            return [a / b for a, b in zip(series[backend], base["torch"], strict=False)]

        print()
        print(
            "| encoder | raw encode prompts/s | vs fp32 raw (range) | /api/score/ prompts/s "
            "| vs fp32 API | vs fp32 raw encode (range) | gate: items / prompts | rho drift "
            "(95% interval) | flags flipped | gate |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for backend, quantization, _ in variants:
            gate = gates.get(backend)
            raw_r, api_r, to_raw = (
                ratios(raw, backend, raw),
                ratios(api, backend, api),
                ratios(api, backend, raw),
            )
            cells = [
                f"{backend}/{quantization}",
                f"{statistics.median(raw[backend]):.1f}",
                f"{statistics.median(raw_r):.2f}x ({spread(raw_r)})",
                f"{statistics.median(api[backend]):.1f}" if api[backend] else "refused",
                f"{statistics.median(api_r):.2f}x" if api_r else "",
                f"{statistics.median(to_raw):.2f}x ({spread(to_raw)})" if to_raw else "",
            ]
            if gate is None:
                cells += ["", "(reference)", "", ""]
            else:
                m = gate.metrics
                low, high = m["interval"]
                cells += [
                    f"{m['n']} / {m['prompts']}",
                    f"{m['rho_drift']:.4f} ({low:.4f}-{high:.4f})",
                    f"{m['flips']} of {m['n']}",
                    "passed" if gate.passed else "refused",
                ]
            print("| " + " | ".join(cells) + " |")
        print(f"\nload average per repeat: {'; '.join(loads)}; at the end: {load()}")


if __name__ == "__main__":
    main()
