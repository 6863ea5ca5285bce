"""int8 serving, end to end in one run: raw encode and ``/api/score/``, fp32 against the gated
int8 copies, with the gate's figures beside them.

1. A throwaway SQLite database and folders (the exports in ``var/models``, kept):
   the catalogue's first 12 occupations ranked by synthetic annotators, one run on
   ``--encoder`` (all-mpnet-base-v2 by default; 3 epochs at lr 1e-2 as the tests do),
   promoted; its threshold calibrated on its fp32 eval scores.
2. The accuracy gate (``manage.py encoder_gate``'s ``run_gate``) of ONNX int8 and OpenVINO
   int8 for that version at the settings' default tolerances: rho drift, flags flipped.
3. Raw encode: ``--texts`` distinct new prompts, batch 64, by SentenceTransformer (fp32)
   and by each int8 copy (``ExportedEncoder.encode``); each repeat times every variant in
   turn, so a noisy machine slows them alike.
4. ``/api/score/`` through the Django test client (token auth, the whole DRF stack and
   the scorer), the deployment set to fp32 and to each int8 copy
   (``STEREORANK_SCORING_ENCODER_*``): ``--requests`` requests of ``--batch`` prompts never
   seen before (each encoded and written to the cache), per repeat, in turn.

Printed: one table, prompts/s (median over repeats) and the median per-repeat ratios: to
fp32 raw and through the API, and the API's to fp32 raw encode (the issue's aim: int8
served at 2.5x raw fp32 encode or better), beside the gate's drift and flips; the load
average.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/int8_serving.py
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, load

sys.path.insert(0, str(ROOT))

COPIES = [("onnx", "int8"), ("openvino", "int8")]
SETTINGS = ("STEREORANK_SCORING_ENCODER_BACKEND", "STEREORANK_SCORING_ENCODER_QUANTIZATION")


def novel(n: int, tag: str) -> list[str]:
    """``n`` prompt-like texts that no earlier step has seen (``tag`` keeps sets apart)."""
    from annotation.catalogue import read_catalogue

    occupations = [o["name"] for o in read_catalogue()["occupations"]]
    looks = ["candid", "studio", "documentary", "cinematic", "close-up", "wide-angle"]
    places = ["at work", "in a busy city", "at home", "outdoors at dawn", "in an office"]
    return [
        f"A {looks[i % len(looks)]} photo of a {occupations[i % len(occupations)]} "
        f"{places[i % len(places)]}, scene {tag}-{i}"
        for i in range(n)
    ]


def setup(encoder: str):
    """The study, one trained version on ``encoder``, promoted; a scoring user's client."""
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    from annotation.catalogue import load_catalogue, read_catalogue
    from annotation.simulation import simulate
    from annotation.tasks_builder import build_tasks
    from scoring import roles
    from training import services
    from training.runs import execute_run

    catalogue = read_catalogue()
    catalogue["occupations"] = catalogue["occupations"][:12]
    path = Path(os.environ["STEREORANK_VAR_DIR"]) / "catalogue.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    import json

    path.write_text(json.dumps(catalogue))
    load_catalogue(placeholders_per_prompt=2, path=path)
    tasks = build_tasks(size=6, overlap=1, seed=0)
    simulate(6, -(-tasks // 6), seed=0)
    snapshot = services.create_snapshot(include_synthetic=True, weighting="none")
    run = services.start_run(
        snapshot,
        encoder=encoder,
        epochs=3,
        hyperparameters={"lr": 1e-2, "n_boot": 100},
        enqueue=False,
    )
    execute_run(run.pk, "benchmark")
    run.refresh_from_db()
    checkpoint = run.checkpoint
    services.promote(checkpoint, actor="benchmarks/int8_serving.py")
    user = get_user_model().objects.create_user("bench-scorer", password="bench-pass-123")
    roles.grant(user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoder", default="all-mpnet-base-v2")
    parser.add_argument("--texts", type=int, default=192, help="Raw encode texts per repeat.")
    parser.add_argument("--requests", type=int, default=4, help="API requests per repeat.")
    parser.add_argument("--batch", type=int, default=32, help="Prompts per API request.")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

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
            STEREORANK_MODEL_DIR=str(ROOT / "var" / "models"),
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
        from django.core.management import call_command

        settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]  # the test client's
        call_command("migrate", verbosity=0)
        import torch

        print(
            f"date {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs, torch threads "
            f"{torch.get_num_threads()}, load {load()}",
            flush=True,
        )
        from training import encoders
        from training.encoders import run_gate
        from training.errors import QuantizationRefused

        start = time.perf_counter()
        checkpoint, client = setup(args.encoder)
        print(
            f"v{checkpoint.version} on {args.encoder}: rho {checkpoint.metrics['spearman']:.3f}, "
            f"threshold {checkpoint.threshold:.4f} ({time.perf_counter() - start:.0f} s)",
            flush=True,
        )
        gates = {}
        for backend, quantization in COPIES:
            start = time.perf_counter()
            try:
                gate = run_gate(checkpoint, backend, quantization)
            except QuantizationRefused as refused:
                print(f"gate {backend}/{quantization}: {refused}", flush=True)
                from training.models import EncoderGate

                gate = EncoderGate.objects.get(checkpoint=checkpoint, backend=backend)
            gates[backend] = gate
            m = gate.metrics
            print(
                f"gate {backend}/{quantization}: {'passed' if gate.passed else 'refused'}, "
                f"n {m['n']}, rho {m['rho_fp32']:.4f} -> {m['rho_quantized']:.4f}, drift "
                f"{m['rho_drift']:.4f}, flips {m['flips']} ({m['flip_share']:.1%}) "
                f"({time.perf_counter() - start:.0f} s with export; load {load()})",
                flush=True,
            )

        fp32 = encoders.encoder(args.encoder, device="cpu")
        copies = {b: encoders.encoder(args.encoder, backend=b, quantization=q) for b, q in COPIES}
        variants = [("torch", "none", fp32)] + [(b, q, copies[b]) for b, q in COPIES]
        raw = {b: [] for b, _, _ in variants}
        api = {b: [] for b, _, _ in variants}
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
            print(f"repeat {r + 1}: load {load()}", flush=True)

        def ratio(series: dict, backend: str) -> str:
            if not series[backend]:
                return "refused"
            pairs = zip(series[backend], series["torch"], strict=True)
            return f"{statistics.median(a / b for a, b in pairs):.2f}x"

        print()
        print(
            "| encoder | raw encode prompts/s | vs fp32 | /api/score/ prompts/s | vs fp32 "
            "| vs fp32 raw encode | gate rho drift | flags flipped |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for backend, quantization, _ in variants:
            gate = gates.get(backend)
            drift = f"{gate.metrics['rho_drift']:.4f}" if gate else "(reference)"
            flips = f"{gate.metrics['flips']} of {gate.metrics['n']}" if gate else ""
            served = f"{statistics.median(api[backend]):.1f}" if api[backend] else "refused"
            raws = zip(api[backend], raw["torch"], strict=False)
            to_raw = f"{statistics.median(a / b for a, b in raws):.2f}x" if api[backend] else ""
            print(
                f"| {backend}/{quantization} | {statistics.median(raw[backend]):.1f} | "
                f"{ratio(raw, backend)} | {served} | {ratio(api, backend)} | {to_raw} | "
                f"{drift} | {flips} |"
            )
        print(f"\nload average at the end: {load()}")


if __name__ == "__main__":
    main()
