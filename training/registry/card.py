"""A version's model card, in the Hugging Face format: YAML front matter, then Markdown.

Its sections are the DJ-PO card's (docs/reference), and every figure in them is read
from what the platform already holds (``card_data``): the checkpoint row (encoder,
recipe, metrics with their intervals, threshold and its basis), its snapshot (hash,
counts, split, exclusions, label weighting), its run (per-epoch history, the
augmentation and how much of the training data it made), the annotators behind the
snapshot's rankings as they count today (demographic counts, k-anonymous: a group of
fewer than ``STEREORANK_GROUP_K`` annotators is neither named nor counted, only how
many were hidden: ``core.small_groups``), and the stored perspective report (least- and
best-aligned groups of k or more; never computed here).
Nothing is typed by hand; what the platform does not hold (validation studies for
now) is said to be missing. The front matter carries every figure under
``stereorank`` beside the hub's own keys (``base_model``, ``model-index``); the
Markdown is ``training.registry.card_markdown``.

Validation results: the reports of the validation studies whose treatment is this
version's optimiser (``annotation.validation.results.linked_reports``), or the
``validation`` given (``{"study": name, "report": ...}``); without any the card says
none is linked.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

import yaml
from django.conf import settings

from annotation.rankings.selectors import demographic_labels
from annotation.stats.records import group_of
from annotation.validation import results as validation_results
from core.json import json_safe
from core.small_groups import keep_groups
from training import selectors
from training.errors import RegistryError
from training.models import Checkpoint, DatasetSnapshot, TrainingRun
from training.perspectives import export as perspective_export
from training.perspectives.services import k_anonymity
from training.registry import services as registry
from training.registry.card_markdown import markdown
from training.snapshots.services import EVAL
from training.snapshots.steering import split_hyperparameters
from training.snapshots.steering import train_rows as steered_rows

# The project's licence (pyproject.toml), the hub's name for it.
LICENSE = "mit"
LIBRARY = "stereorank"
TAGS = ["reward-model", "text-to-image", "occupation-stereotypes", "listwise-ranking"]
NOT_STATED = "not stated"  # unanswered or "prefer not to say": a group like any other


def demographic_counts(
    demographics: Mapping[int, Mapping], fields: Mapping[str, str], k: int
) -> list[dict]:
    """Per field: annotators per group, groups of ``k`` or more only (largest first), and
    how many groups were hidden; ``fields`` is ``{key: label}``."""
    out = []
    for key, label in fields.items():
        counts = Counter(group_of(d, key) or NOT_STATED for d in demographics.values())
        shown = keep_groups(dict(counts), k)
        largest = sorted(shown.groups.items(), key=lambda gn: (-gn[1], gn[0]))
        out.append(
            {
                "field": key,
                "label": label,
                "groups": [{"group": g, "annotators": n} for g, n in largest],
                "hidden_groups": shown.hidden,
            }
        )
    return out


def _training_data(snapshot: DatasetSnapshot, run: TrainingRun | None, k: int) -> dict:
    examples = snapshot.examples
    annotators = selectors.snapshot_annotators(snapshot)
    exclusions = snapshot.exclusions or {}
    data = {
        "snapshot": snapshot.pk,
        "content_hash": snapshot.content_hash,
        "created_at": snapshot.created_at.isoformat(),
        "rankings": snapshot.ranking_count,
        "annotators": len(annotators),
        "include_synthetic": snapshot.include_synthetic,
        "items": snapshot.example_count,
        "prompts": len({r["group"] for r in examples}),
        "occupations": sorted({r["occupation"] for r in examples}),
        "prompt_types": dict(sorted(Counter(r["prompt_type"] for r in examples).items())),
        "split": {
            "train": snapshot.train_count,
            "eval": snapshot.eval_count,
            "eval_fraction": snapshot.eval_fraction,
            "seed": snapshot.split_seed,
        },
        "left_out": {
            "rankings": exclusions.get("rankings", {}),
            "annotators": len(exclusions.get("annotators", {})),
            "check_cards": exclusions.get("check_cards", 0),
        },
        "label_weighting": (snapshot.label_weighting or {}).get("method", "none"),
        "demographics": demographic_counts(annotators, demographic_labels(), k),
        "augmentation": None,
    }
    if run is not None:
        steering = split_hyperparameters(run.hyperparameters)[1]
        originals = steered_rows(snapshot, steering)
        paraphrases = 0
        if run.augmentation is not None:
            a = run.augmentation
            paraphrases = selectors.paraphrase_count(a, {r["key"] for r in originals})
            data["augmentation"] = {
                "id": a.pk,
                "backend": a.backend,
                "model": a.model,
                "per_original": a.n,
                "min_cosine": a.min_cosine,
                "kept": a.stats.get("kept"),
                "rejected": a.stats.get("rejected"),
                "mean_cosine": a.stats.get("mean_cosine"),
            }
        total = len(originals) + paraphrases
        data["training_examples"] = {
            "originals": len(originals),
            "paraphrases": paraphrases,
            "total": total,
            "paraphrased_share": paraphrases / total if total else 0.0,
        }
    return data


def _performance(checkpoint: Checkpoint, run: TrainingRun | None) -> dict:
    m = checkpoint.metrics or {}
    per_occupation = m.get("per_occupation") or {}
    finite = {o: r for o, r in per_occupation.items() if r is not None}
    spread = None
    if finite:
        low, high = min(finite, key=finite.get), max(finite, key=finite.get)
        spread = {
            "min": {"occupation": low, "rho": finite[low]},
            "median": statistics.median(finite.values()),
            "max": {"occupation": high, "rho": finite[high]},
            "undefined": len(per_occupation) - len(finite),
        }
    figures = ("spearman", "kendall_tau", "pairwise_accuracy", "mean_occupation_spearman")
    return {
        **{name: m.get(name) for name in figures},
        **{f"{name}_ci": m.get(f"{name}_ci") for name in figures},
        "n_items": m.get("n_items"),
        "n_prompts": m.get("n_groups"),
        "n_boot": m.get("n_boot"),
        "history": run.attempt_history if run is not None else [],
        "per_occupation": per_occupation,
        "per_occupation_spread": spread,
    }


def _perspectives(checkpoint: Checkpoint, snapshot: DatasetSnapshot | None) -> list[dict]:
    """Per stored field: the least- and best-aligned groups (groups of k or more only)."""
    if snapshot is None:
        return []
    out = []
    for field in perspective_export.report(checkpoint, snapshot, [])["fields"]:
        groups = field["groups"]  # best aligned first
        keep = ("group", "alignment", "alignment_ci", "human_baseline", "human_baseline_ci")
        out.append(
            {
                "field": field["field"],
                "k": field["k"],
                "groups": len(groups),
                "hidden_groups": field["hidden_groups"],
                "least_aligned": {n: groups[-1].get(n) for n in keep} if groups else None,
                "best_aligned": {n: groups[0].get(n) for n in keep} if groups else None,
            }
        )
    return out


def group_heads_shown(checkpoint: Checkpoint, k: int | None = None) -> dict | None:
    """The version's group heads (``metrics["group_heads"]``) as anyone is shown them (the
    card, the staff API): groups of k (today's by default) or more with their sizes (a
    smaller one is counted, never named), and the fit's figures."""
    k = k_anonymity() if k is None else k
    heads = (checkpoint.metrics or {}).get("group_heads")
    if not heads:
        return None
    shown = keep_groups({g["group"]: g["annotators"] for g in heads["groups"]}, k)
    return {
        **heads,
        "groups": [{"group": g, "annotators": n} for g, n in shown.groups.items()],
        "hidden_groups": shown.hidden,
    }


def _validation(validation: Sequence[Mapping]) -> list[dict]:
    """The card's figures of each linked validation study's report (Welch's t on
    per-annotator mean ranks, as the DJ-PO card reports it)."""
    out = []
    for linked in validation:
        r = linked["report"]
        out.append(
            {
                "study": linked["study"],
                "n_annotators": r["n_annotators"],
                "n_rankings": r["n_rankings"],
                "conditions": r["conditions"],
                "per_condition": {
                    c: {"mean": f["mean"], "sd": f["sd"], "n": f["n"]}
                    for c, f in r["per_condition"].items()
                },
                "welch": {n: r["welch"][n] for n in ("t", "df", "p", "text")},
                "paired_t": {n: r["paired_t"][n] for n in ("t", "df", "p", "text")},
                "difference": r["bootstrap"]["difference"],
                "probability_of_superiority": r["effect_size"]["probability_of_superiority"],
            }
        )
    return out


def card_data(checkpoint: Checkpoint, validation: Sequence[Mapping] | None = None) -> dict:
    """Every figure of ``checkpoint``'s card, JSON-safe, read from where it is kept (the
    linked validation studies' reports unless ``validation`` is given)."""
    if validation is None:
        validation = validation_results.linked_reports(
            checkpoint.version, n_boot=settings.STEREORANK["QUALITY_N_BOOT"]
        )
    run = checkpoint.run
    snapshot = checkpoint.snapshot
    k = k_anonymity()
    hyperparameters, steering = split_hyperparameters(checkpoint.hyperparameters or {})
    identity = checkpoint.encoder_identity or {}
    return json_safe(
        {
            "version": checkpoint.version,
            "status": str(checkpoint.status),
            "created_at": checkpoint.created_at.isoformat(),
            "parent_version": checkpoint.parent.version if checkpoint.parent else None,
            "run": run.pk if run is not None else None,
            "source": checkpoint.source,
            "code_version": checkpoint.code_version,
            "head_sha256": checkpoint.head_sha256,
            "data_hash": checkpoint.data_hash,
            "encoder": {
                "name": identity.get("name", checkpoint.encoder_name),
                "revision": identity.get("revision"),
                "weight_sha256": identity.get("weight_sha256"),
                "dim": identity.get("dim"),
            },
            "recipe": {
                "name": hyperparameters.get("recipe"),
                "hyperparameters": {
                    n: v for n, v in sorted(hyperparameters.items()) if n != "recipe"
                },
                "steering": steering,
            },
            "training_data": _training_data(snapshot, run, k) if snapshot is not None else None,
            "performance": _performance(checkpoint, run),
            "threshold": {
                "value": checkpoint.threshold,
                "basis": checkpoint.threshold_basis,
                "flag": (checkpoint.metrics or {}).get("flag"),
            },
            "validation": _validation(validation),
            "perspectives": _perspectives(checkpoint, snapshot),
            "group_heads": group_heads_shown(checkpoint, k),
            "k": k,
        }
    )


def front_matter(data: dict) -> dict:
    """The hub's metadata keys (licence, base model, model-index) and every figure."""
    perf = data["performance"]
    metrics = [
        {"type": kind, "name": name, "value": perf[key]}
        for key, kind, name in (
            ("spearman", "spearmanr", "Spearman's rho"),
            ("kendall_tau", "kendalltau", "Kendall's tau"),
            ("pairwise_accuracy", "accuracy", "Pairwise accuracy"),
        )
        if perf[key] is not None
    ]
    meta = {
        "license": LICENSE,
        "library_name": LIBRARY,
        "tags": TAGS,
        "base_model": data["encoder"]["name"],
    }
    training = data["training_data"]
    if metrics and training is not None:
        meta["model-index"] = [
            {
                "name": f"stereorank-v{data['version']}",
                "results": [
                    {
                        "task": {"type": "text-ranking", "name": "Prompt stereotypicality"},
                        "dataset": {
                            "type": "stereorank-snapshot",
                            "name": f"snapshot {training['snapshot']}",
                            "revision": training["content_hash"],
                            "split": EVAL,
                        },
                        "metrics": metrics,
                    }
                ],
            }
        ]
    return {**meta, "stereorank": data}


def model_card(checkpoint: Checkpoint, validation: Sequence[Mapping] | None = None) -> str:
    """``checkpoint``'s card: YAML front matter between ``---`` lines, then Markdown."""
    data = card_data(checkpoint, validation)
    meta = yaml.safe_dump(front_matter(data), sort_keys=False, allow_unicode=True)
    return f"---\n{meta}---\n\n{markdown(data)}"


def export_checkpoint(checkpoint: Checkpoint, fmt: str, out: Path) -> Path:
    """The registry's export (``seed`` .pth or ``native`` folder) with the version's card:
    ``README.md`` in the folder, ``<name>.md`` beside the ``.pth``."""
    if fmt not in registry.EXPORT_FORMATS:
        raise RegistryError(f"unknown format {fmt!r}: use seed or native")
    return registry.export_checkpoint(checkpoint, fmt, out, card=model_card(checkpoint))
