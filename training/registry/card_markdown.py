"""The Markdown body of a model card, from ``training.registry.card.card_data``'s dict.

The sections follow the DJ-PO card's; the words are fixed, every figure comes from
the data (nothing is computed here but formatting). Plain Python: no Django, no torch.
"""

from __future__ import annotations

import math
import re

from core.small_groups import hidden_note

THRESHOLD_MARK = "stereorank-threshold:"
"""Marks the threshold's exact value in a card (an HTML comment, unseen when rendered),
so that importing the ``.pth`` beside it keeps the version's own threshold."""
_MARKED = re.compile(rf"<!-- {THRESHOLD_MARK} (\S+) -->")
_SHOWN = re.compile(r"^## Threshold\s+- Value: ([0-9.eE+-]+)", re.MULTILINE)


def threshold_of(card: str) -> float | None:
    """The threshold a model card states (its exact mark, else its "Value:" line), or None."""
    found = _MARKED.search(card) or _SHOWN.search(card)
    if not found:
        return None
    try:
        value = float(found.group(1))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def num(value, digits: int = 4) -> str:
    """A figure to ``digits`` decimals, or "n/a" when there is none."""
    return "n/a" if value is None else f"{value:.{digits}f}"


def with_ci(value, ci, digits: int = 4) -> str:
    """``0.4915 (95% CI 0.4012 to 0.5720)``, or the figure alone without an interval."""
    if value is None or not ci:
        return num(value, digits)
    return f"{num(value, digits)} (95% CI {num(ci[0], digits)} to {num(ci[1], digits)})"


def _estimate(e: dict, digits: int = 2) -> str:
    """An ``Estimate``'s dict with its interval (``with_ci``)."""
    ci = (e["ci_low"], e["ci_high"]) if e.get("ci_low") is not None else None
    return with_ci(e["value"], ci, digits)


def _description(d: dict) -> list[str]:
    enc, perf, data = d["encoder"], d["performance"], d["training_data"]
    size = "no snapshot recorded" if data is None else f"{data['items']:,} human-ranked items"
    if data and data.get("training_examples"):
        size += f" ({data['training_examples']['total']:,} training examples with paraphrases)"
    return [
        "## Model Description",
        "",
        "A frozen SentenceTransformer encoder with a trainable linear head, trained with a "
        "listwise ranking loss on human rankings of prompt-image pairs.",
        "",
        "- Model Type: Reward Model for Prompt Scoring",
        f"- Base Model: {enc['name']} (frozen; revision {enc['revision'] or 'not recorded'}, "
        f"weights SHA-256 {enc['weight_sha256']})",
        f"- Architecture: SentenceTransformer + Linear Head ({enc['dim']} → 1)",
        "- Task: Predicting prompt stereotypicality (higher score = more diverse)",
        f"- Training Data: {size}",
        f"- Performance: Spearman's ρ = {with_ci(perf['spearman'], perf['spearman_ci'])}",
        f"- Version: v{d['version']} ({d['status']}), registered {d['created_at']}"
        + (f", parent v{d['parent_version']}" if d["parent_version"] else ""),
        f"- Head SHA-256: {d['head_sha256']}; code {d['code_version'] or 'not recorded'}"
        + (f"; imported from {d['source']}" if d["source"] else ""),
        "",
    ]


def _intended_use(d: dict) -> list[str]:
    enc, threshold = d["encoder"], d["threshold"]["value"]
    return [
        "## Intended Use",
        "",
        "### Primary Use Case",
        "",
        "Scoring occupation-related text prompts before they reach a text-to-image model. "
        f"Prompts scoring below the threshold ({num(threshold)}) are flagged as stereotypical "
        "and can be optimised.",
        "",
        "### Example Usage",
        "",
        "With the seed-format export (`manage.py export_checkpoint "
        f"{d['version']} --format seed --out v{d['version']}.pth`):",
        "",
        "```python",
        "import torch",
        "import torch.nn as nn",
        "from sentence_transformers import SentenceTransformer",
        "",
        "class RewardModel(nn.Module):",
        f"    def __init__(self, name={enc['name']!r}, embedding_dim={enc['dim']}):",
        "        super().__init__()",
        "        self.embedding_model = SentenceTransformer(name)",
        "        self.fc = nn.Linear(embedding_dim, 1)",
        "        self.dropout = nn.Dropout(p=0.1)",
        "",
        "    def forward(self, prompts):",
        "        embeddings = self.embedding_model.encode(prompts, convert_to_tensor=True)",
        "        return self.fc(self.dropout(embeddings)).squeeze(-1)",
        "",
        "model = RewardModel()",
        f"model.load_state_dict(torch.load('v{d['version']}.pth', map_location='cpu'))",
        "model.eval()",
        "with torch.no_grad():",
        "    score = model(['Generate an image of a CEO']).item()",
        f"print(score, 'needs optimisation:', score < {threshold!r})",
        "```",
        "",
    ]


def _dataset(data: dict | None) -> list[str]:
    lines = ["### Dataset", ""]
    if data is None:
        return [*lines, "No snapshot is recorded with this version (an imported file).", ""]
    split, left = data["split"], data["left_out"]
    types = ", ".join(f"{t} {n:,}" for t, n in data["prompt_types"].items())
    reasons = ", ".join(f"{r} {n:,}" for r, n in left["rankings"].items()) or "none"
    lines += [
        f"- Snapshot {data['snapshot']}, content hash {data['content_hash']}, "
        f"frozen {data['created_at']}",
        f"- {data['rankings']:,} rankings by {data['annotators']:,} annotators "
        f"(annotators counted as their rankings count today; synthetic annotators "
        f"{'included' if data['include_synthetic'] else 'left out'})",
        f"- {data['items']:,} prompt-image items of {data['prompts']:,} prompts: "
        f"{len(data['occupations'])} occupations × prompt types ({types} items)",
        f"- Occupations: {', '.join(data['occupations'])}",
        f"- Split grouped by original prompt: {split['train']:,} train, {split['eval']:,} eval "
        f"items (eval fraction {split['eval_fraction']}, seed {split['seed']})",
        f"- Left out: rankings by reason: {reasons}; {left['annotators']} annotators named "
        f"in the exclusions; {left['check_cards']} attention-check cards",
        f"- Label weighting: {data['label_weighting']}",
    ]
    aug, ex = data["augmentation"], data.get("training_examples")
    if aug is not None:
        lines.append(
            f"- Augmentation {aug['id']}: {aug['per_original']} paraphrases per original by "
            f"{aug['backend']}{' (' + aug['model'] + ')' if aug['model'] else ''}, kept when "
            f"cosine ≥ {aug['min_cosine']}: {aug['kept']:,} kept, {aug['rejected']:,} rejected; "
            "labels inherited from the originals"
        )
    else:
        lines.append("- Augmentation: none (no paraphrases)")
    if ex is not None:
        lines.append(
            f"- Training examples: {ex['originals']:,} originals + {ex['paraphrases']:,} "
            f"paraphrases = {ex['total']:,} ({ex['paraphrased_share']:.1%} paraphrased)"
        )
    return [*lines, ""]


def _configuration(d: dict) -> list[str]:
    recipe = d["recipe"]
    hp = recipe["hyperparameters"]
    lines = [
        "### Training Configuration",
        "",
        f"- Recipe: {recipe['name'] or 'not recorded'}",
        *(f"- {name}: {value}" for name, value in hp.items()),
    ]
    if "temperature" in hp and "alpha" in hp:
        lines.append(
            f"- Loss: listwise softmax cross-entropy at temperature {hp['temperature']} "
            f"+ {hp['alpha']} × MSE"
        )
    if recipe["steering"]:
        lines.append(f"- Steering: {recipe['steering']}")
    return [*lines, "", *_group_heads(d.get("group_heads"))]


def flag_line(f: dict | None) -> str:
    """The flag's figures on the eval split in one line (the card, ``checkpoints``, the
    registry page), or why there are none."""
    if not f:
        return "not measured (a version from before flag figures, or imported)"
    figures = ", ".join(
        f"{name} {with_ci(f[key], f[f'{key}_ci'], 2)}"
        for key, name in (("precision", "precision"), ("recall", "recall"), ("f1", "F1"))
    )
    fallback = (
        "; calibration fell back to the seed's 0.12"
        if f.get("calibration") == ("seed-default")
        else ""
    )
    return (
        f"{figures} on {f['n_prompts']} held-out prompts ({f['n_stereotypical']} "
        f"stereotypical, {f['n_flagged']} flagged){fallback}"
    )


def _flag(f: dict | None) -> list[str]:
    return [f"- The flag on the eval split, against the catalogue's prompt type: {flag_line(f)}"]


def _group_heads(g: dict | None) -> list[str]:
    if not g:
        return []
    hidden = f"; {g['hidden_groups']} group(s) under k not named" if g["hidden_groups"] else ""
    return [
        f"### Group heads ({g['field']})",
        "",
        "One head per group of k or more annotators: the pooled head plus an offset fitted "
        f"to the group's labels and shrunk toward it (penalty {g['penalty']:g}, chosen by "
        f"grouped cross-validation: held-out error {num(g['cv_error'])} against "
        f"{num(g['pooled_cv_error'])} for the pooled head alone).",
        "",
        *(f"- {x['group']}: {x['annotators']} annotators" for x in g["groups"]),
        f"- Disagreement: a head for the spread of people's labels; a prompt above "
        f"{num(g['disagreement_threshold'])} is one people disagree about{hidden}",
        "- The seed `.pth` export holds the pooled head only; the group heads and the "
        "disagreement head ship in the native format (`groups.safetensors`).",
        *(
            f"- {g['field']} is a special category: chosen for study {c['study']} by its owner "
            f"{c['by']} on {c['at'][:10]}: {c['reason']}"
            for c in g.get("special_category_choices") or []
        ),
        "",
    ]


def _performance(d: dict) -> list[str]:
    p = d["performance"]
    lines = [
        "## Performance Metrics",
        "",
        f"On the eval split ({p['n_items'] or 0} items, {p['n_prompts'] or 0} prompts; "
        f"intervals: bootstrap over prompts, {p['n_boot'] or 0} resamples):",
        "",
        f"- Spearman's ρ: {with_ci(p['spearman'], p['spearman_ci'])}",
        f"- Kendall's τ: {with_ci(p['kendall_tau'], p['kendall_tau_ci'])}",
        f"- Pairwise accuracy: {with_ci(p['pairwise_accuracy'], p['pairwise_accuracy_ci'])}",
        "- Mean per-occupation ρ: "
        + with_ci(p["mean_occupation_spearman"], p["mean_occupation_spearman_ci"]),
    ]
    history = p["history"]
    if history:
        first, last = history[0], history[-1]
        lines += [
            f"- Training Progression: {num(first['rho'])} (epoch {first['epoch']}) → "
            f"{num(last['rho'])} (epoch {last['epoch']})",
            "",
            "| Epoch | Loss | Eval ρ |",
            "|---:|---:|---:|",
            *(f"| {h['epoch']} | {num(h['loss'])} | {num(h['rho'])} |" for h in history),
        ]
    else:
        lines.append("- Training Progression: no run recorded with this version")
    spread = p["per_occupation_spread"]
    if spread:
        lines += [
            "",
            f"Per occupation: ρ from {num(spread['min']['rho'])} ({spread['min']['occupation']}) "
            f"to {num(spread['max']['rho'])} ({spread['max']['occupation']}), median "
            f"{num(spread['median'])}"
            + (f"; {spread['undefined']} undefined (no spread)" if spread["undefined"] else ""),
            "",
            "| Occupation | ρ |",
            "|---|---:|",
            *(f"| {o} | {num(r)} |" for o, r in p["per_occupation"].items()),
        ]
    return [*lines, ""]


def _validation(d: dict) -> list[str]:
    lines = ["## Validation Results", ""]
    if not d["validation"]:
        return [*lines, "No validation study is linked to this version.", ""]
    for v in d["validation"]:
        lines += [
            f"### {v['study']}",
            "",
            f"- Study Size: {v['n_annotators']} annotators, {v['n_rankings']} rankings",
            f"- Statistical Test: Welch's t-test, {v['welch']['text']}",
            f"- Paired t-test on each annotator's difference: {v['paired_t']['text']}",
            f"- Difference in mean rank (bootstrap over annotators and occupations): "
            f"{_estimate(v['difference'])}",
            f"- Probability that an optimised image outranks an original one: "
            f"{_estimate(v['probability_of_superiority'])}",
            "- Mean Rankings (higher = less stereotypical):",
            *(
                f"  - {c}: M = {num(f['mean'], 2)}, SD = {num(f['sd'], 2)} (n = {f['n']})"
                for c, f in v["per_condition"].items()
            ),
            "",
        ]
    return lines


def _limitations(d: dict) -> list[str]:
    data, k = d["training_data"], d["k"]
    lines = ["## Limitations and Biases", "", "### Known Limitations", ""]
    if data is None:
        return [*lines, "- No snapshot is recorded: the annotator pool is unknown.", ""]
    lines.append(
        f"- Annotator pool: {data['annotators']} annotators. Counts per group below; groups "
        f"of fewer than {k} annotators are hidden (neither named nor counted)."
    )
    for field in data["demographics"]:
        groups = "; ".join(f"{g['group']}: {g['annotators']}" for g in field["groups"])
        hidden = hidden_note(field["hidden_groups"], k)
        lines.append(
            f"  - {field['label']}: {groups or 'no group of ' + str(k) + ' or more'}"
            + (f" ({hidden})" if hidden else "")
        )
    if d["perspectives"]:
        lines.append("- Whose opinions it rewards (perspective report, alignment 0 to 1):")
        for f in d["perspectives"]:
            low, best = f["least_aligned"], f["best_aligned"]
            hidden = hidden_note(f["hidden_groups"], f["k"])
            hidden = f" ({hidden})" if hidden else ""
            if low is None:
                lines.append(f"  - {f['field']}: no group of {f['k']} or more annotators{hidden}")
                continue
            lines.append(
                f"  - {f['field']}: least aligned {low['group']} at "
                f"{with_ci(low['alignment'], low['alignment_ci'], 3)} (human baseline "
                f"{with_ci(low['human_baseline'], low['human_baseline_ci'], 3)}); best aligned "
                f"{best['group']} at {with_ci(best['alignment'], best['alignment_ci'], 3)}{hidden}"
            )
    else:
        lines.append("- Whose opinions it rewards: no perspective report is stored yet.")
    ex = data.get("training_examples")
    if ex is not None:
        lines.append(
            f"- Synthetic Data Dependency: {ex['paraphrased_share']:.1%} of the training "
            "examples are paraphrases"
        )
    lines += [
        f"- Occupation Scope: the {len(data['occupations'])} occupations above",
        f"- Score Calibration: threshold {num(d['threshold']['value'])}, {d['threshold']['basis']}",
        "",
        "### Ethical Considerations",
        "",
        "- The model reflects the values of the annotator pool above, not of people at large.",
        "- It should be one part of a broader ethical AI strategy, and its outputs checked in "
        "the cultural context where it is used.",
        "",
    ]
    return lines


def markdown(d: dict) -> str:
    """The card's Markdown body (every section of the DJ-PO card the platform can fill)."""
    lines = [
        f"# stereorank reward model v{d['version']}: Prompt Stereotypicality Scorer",
        "",
        "Scores text-to-image prompts by how likely they are to produce stereotypical "
        "representations of occupations (the DJ-PO framework's reward model). "
        "Every figure on this card was written by the platform from its records.",
        "",
        *_description(d),
        *_intended_use(d),
        "## Training Details",
        "",
        *_dataset(d["training_data"]),
        *_configuration(d),
        *_performance(d),
        "## Threshold",
        "",
        f"- Value: {num(d['threshold']['value'])} (prompts scoring below it are flagged)",
        f"- How it was set: {d['threshold']['basis'] or 'not recorded'}",
        *_flag(d["threshold"].get("flag")),
        f"<!-- {THRESHOLD_MARK} {d['threshold']['value']!r} -->",
        "",
        *_validation(d),
        *_limitations(d),
    ]
    return "\n".join(lines)
