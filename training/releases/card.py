"""A release's dataset card: YAML metadata for the Hub, then Markdown whose every figure is
read from the release itself (``training.releases.services.card_data``).

The metadata follows the Hub's dataset card spec (``license``, ``task_categories``,
``size_categories``, ``configs`` with each split's ``data_files``, the rankings config the
default), so ``datasets.load_dataset(DIR, CONFIG)`` finds every file. The Markdown follows
Hugging Face's dataset card template (its sections, in its order), as the model card
(``training.registry.card_markdown``) follows the DJ-PO card's: fixed words, figures from
the data. A demographic group is named only with k or more released annotators behind it
(``core.small_groups.keep_groups``); a dropped column is named by its question, never by
its answers. Plain Python: no Django.
"""

from __future__ import annotations

import math

import yaml

from core.small_groups import hidden_note
from training.releases.files import path_of
from training.releases.rows import CONFIGS

TASK_CATEGORIES = ["text-ranking", "text-classification"]
TAGS = ["preference-data", "reward-modeling", "stereotypes", "occupations", "stereorank"]
SIZES = ["n<1K", "1K<n<10K", "10K<n<100K", "100K<n<1M", "1M<n<10M", "10M<n<100M"]
ERASURE = (
    "An erased person's rows are never in a release. A published release cannot be "
    "recalled: an erasure after publication cannot reach copies already downloaded."
)


def size_category(n: int) -> str:
    """The Hub's size category of ``n`` rows (``n<1K``, ``1K<n<10K``, ...)."""
    band = 0 if n < 1000 else int(math.log10(n)) - 2
    return SIZES[min(band, len(SIZES) - 1)]


def front_matter(d: dict) -> dict:
    """The card's YAML metadata."""
    rankings = sum(d["rows"]["rankings"].values())
    people = d["annotators"]
    creators = (["crowdsourced"] if people["human"] else []) + (
        ["machine-generated"] if people["synthetic"] else []
    )
    return {
        "license": d["license"],
        "pretty_name": f"stereorank: {d['study']['name']} (snapshot {d['snapshot']['id']})",
        "task_categories": TASK_CATEGORIES,
        "tags": TAGS,
        "size_categories": [size_category(rankings)],
        "annotations_creators": creators,
        "source_datasets": ["original"],
        "configs": [
            {
                "config_name": config,
                **({"default": True} if config == "rankings" else {}),
                "data_files": [
                    {"split": split, "path": path_of(config, split)} for split in d["splits"]
                ],
            }
            for config in CONFIGS
        ],
    }


def _structure(d: dict) -> list[str]:
    rows = d["rows"]
    header = "| config | " + " | ".join(d["splits"]) + " | columns |"
    lines = [header, "|---" * (len(d["splits"]) + 2) + "|"]
    for config in CONFIGS:
        counts = " | ".join(f"{rows[config][s]:,}" for s in d["splits"])
        lines.append(f"| `{config}` | {counts} | {', '.join(d['columns'][config])} |")
    answers = d["demographics"]["columns"]
    return [
        "## Dataset Structure",
        "",
        *lines,
        "",
        "- `rankings`: one ranking's `tiers`, most to least stereotypical (item ids; the "
        "items of one tier were judged equal), its `task` and its `annotator`.",
        "- `items`: each item's prompt `text`, `occupation`, `prompt_type` and "
        "`prompt_group` (a prompt and its paraphrases share one).",
        "- `labels`: each item's `label`, its mean place over K - 1 in the released "
        "rankings (0 = most stereotypical, 1 = least), and how many `rankings` it rests on.",
        "- `pairs`: `prompt` (the occupation), `chosen` (the less stereotypical prompt), "
        "`rejected` and `margin` (the difference of their places over K - 1), as TRL's "
        "RewardTrainer reads preference pairs.",
        "- Answers about the annotators: "
        + (", ".join(f"`{c['column']}` ({c['label']})" for c in answers) or "none released")
        + ".",
        "",
        "The splits are the snapshot's: items split by prompt group (seed "
        f"{d['snapshot']['seed']}, {d['snapshot']['eval_fraction']:.0%} held out as `eval`). "
        "A ranking whose "
        "items fall on both sides is cut in two, each part in its split; a pair across the "
        "split is left out.",
        "",
    ]


def _sizes(sizes: list[int]) -> str:
    """``4``, or ``4 to 6`` when the tasks differ."""
    return str(sizes[0]) if len(sizes) == 1 else f"{sizes[0]} to {sizes[-1]}"


def _consents(d: dict) -> list[str]:
    out = []
    for c in d["consents"]:
        answers = ", ".join(c["demographics"]) or "none"
        own = "yes" if c["free_text"] else "no"
        out.append(
            f"- Version {c['version']} ({c['language']}): rankings may be released; "
            f"answers: {answers}; own words: {own}."
        )
    return out


def _pool(d: dict) -> list[str]:
    demo, people = d["demographics"], d["annotators"]
    out = [
        f"{people['released']:,} annotators, of the {people['counted']:,} whose rankings count "
        "in the snapshot: only those whose consent version allowed a public release."
        + (" Some are synthetic (simulated) annotators." if people["synthetic"] else ""),
        "",
    ]
    for column in demo["columns"]:
        groups = ", ".join(f"{g['group']} ({g['annotators']})" for g in column["groups"])
        note = hidden_note(column["hidden"], demo["k"])
        out.append(f"- {column['label']}: {groups or 'no group of k or more'}" + (
            f" ({note})" if note else "") + ".")  # fmt: skip
    if not demo["columns"]:
        out.append("- No answers about the annotators are released.")
    return [*out, ""]


def _personal(d: dict) -> list[str]:
    demo = d["demographics"]
    dropped = ", ".join(demo["dropped"])
    return [
        "#### Personal and Sensitive Information",
        "",
        "A release holds only what each annotator's consent version allowed: their rankings, "
        "the answers it lists, and answers in their own words only where it says so (else "
        "`other`). Annotators and tasks are named by keys made for this release alone, from "
        "a random key that was never stored: two releases cannot be joined by them, nor a "
        "release with the study's own exports.",
        "",
        f"Every combination of released answers is shared by at least k = {demo['k']} "
        "released annotators. "
        + (
            f"Questions dropped to keep it so: {dropped}. "
            if dropped
            else "No consented question had to be dropped. "
        )
        + (
            f"Annotators whose answers were all dropped (their combination was shared by "
            f"fewer than k): {demo['suppressed']}."
            if demo["suppressed"]
            else "No annotator's answers had to be dropped."
        ),
        "",
        ERASURE,
        "",
    ]


def _agreement(d: dict) -> str:
    a = d["agreement"]
    if a is None:
        return "Agreement: not computable (no task has two released rankings)."

    def ci(e: dict) -> str:
        if e["ci_low"] is None:
            return f"{e['value']:.3f}"
        return f"{e['value']:.3f} (95% CI {e['ci_low']:.3f} to {e['ci_high']:.3f})"

    return (
        f"Agreement over the {a['n_tasks']:,} tasks with two or more released rankings: "
        f"Kendall's W {ci(a['kendall_w'])}, Krippendorff's alpha (ordinal) "
        f"{ci(a['alpha_ordinal'])}, alpha (interval) {ci(a['alpha_interval'])}; computed "
        "on this release's rankings (annotation/stats/agreement.py)."
    )


def _citation(d: dict) -> list[str]:
    study, snap = d["study"], d["snapshot"]
    key = f"stereorank_{study['slug'].replace('-', '_')}_{snap['id']}"
    where = f"https://huggingface.co/datasets/{d['repo']}" if d["repo"] else None
    author = d["controller"] or "The study team"
    bibtex = [
        f"@misc{{{key},",
        f"  title = {{{{stereorank: {study['name']}, snapshot {snap['id']}}}}},",
        f"  author = {{{{{author}}}}},",
        f"  year = {{{d['generated'][:4]}}},",
        f"  note = {{Snapshot {snap['id']}, content hash {snap['content_hash'][:12]}}},",
        *([f"  howpublished = {{\\url{{{where}}}}},"] if where else []),
        "}",
    ]
    apa = f"{author} ({d['generated'][:4]}). stereorank: {study['name']}, snapshot {snap['id']} "
    apa += f"[Data set].{f' {where}' if where else ''}"
    return ["## Citation", "", "**BibTeX:**", "", "```", *bibtex, "```", "", "**APA:**", "", apa]


def markdown(d: dict) -> str:
    """The card's Markdown body (module docstring)."""
    study, snap = d["study"], d["snapshot"]
    total = sum(d["rows"]["rankings"].values())
    lines = [
        f"# Dataset Card for stereorank: {study['name']}",
        "",
        "Human rankings of text-to-image prompts of occupations by how stereotypical their "
        f"images are: {total:,} ranking rows by {d['annotators']['released']:,} annotators, "
        f"from the study `{study['slug']}` as snapshot {snap['id']} froze it.",
        "",
        "## Dataset Details",
        "",
        "### Dataset Description",
        "",
        f"- **Curated by:** {d['controller'] or 'not stated'}",
        f"- **License:** {d['license']}",
        f"- **Snapshot:** {snap['id']} of {snap['created_at']}, content hash "
        f"{snap['content_hash']}",
        f"- **Portal languages:** {', '.join(study['languages'])} (the prompts are in the "
        "language they were written in)",
        "",
        "## Uses",
        "",
        "### Direct Use",
        "",
        "Training and evaluating reward models that score how stereotypical a text-to-image "
        "prompt's images are (`pairs`, `labels`), listwise ranking models (`rankings`), and "
        "studying how annotators disagree.",
        "",
        "### Out-of-Scope Use",
        "",
        "Identifying, contacting or profiling annotators; joining this release with other data "
        "about them; judging any person by the labels.",
        "",
        *_structure(d),
        "## Dataset Creation",
        "",
        "### Curation Rationale",
        "",
        "To measure which prompts produce stereotyped images of occupations, and to train a "
        "reward model that prefers the less stereotypical.",
        "",
        "### Source Data",
        "",
        "#### Data Collection and Processing",
        "",
        f'Collected with stereorank in the study "{study["name"]}" (`{study["slug"]}`'
        + (f", recruited on {study['platform']}" if study["platform"] else "")
        + f") from {d['dates']['first']} to {d['dates']['last']}: each task showed "
        f"{_sizes(d['task_sizes'])} images of one occupation (an attention-check card aside), "
        f"answered as {study['question']}. The rankings are those that count in "
        "the snapshot (consent standing, annotator not excluded by the quality checks, no "
        "gold task), their attention-check cards taken out.",
        "",
        "Consent versions of the released annotators:",
        "",
        *_consents(d),
        "",
        "#### Who are the source data producers?",
        "",
        "The prompts come from the study's catalogue; their images were generated from them. "
        "The images are not part of this release.",
        "",
        "### Annotations",
        "",
        "#### Annotation process",
        "",
        _agreement(d),
        "",
        "#### Who are the annotators?",
        "",
        *_pool(d),
        *_personal(d),
        "## Bias, Risks, and Limitations",
        "",
        "- Only annotators whose consent allowed a public release are here: they may differ "
        "from the others. The labels are recomputed from the released rankings alone and "
        "may differ from those the snapshot trained on.",
        "- The annotator pool is whoever took part, not a sample of any population; answers "
        "about the annotators are coarsened or dropped (above).",
        "- Stereotypes are judged by the annotators, in their own view, of generated images.",
        *(
            ["- Synthetic annotators' rankings are included (simulated, not people)."]
            if d["annotators"]["synthetic"]
            else []
        ),
        "",
        "### Recommendations",
        "",
        "Report results per group only for groups of k or more, as this card does, and cite "
        "the snapshot and content hash the release was made from.",
        "",
        *_citation(d),
        "",
        "## Dataset Card Contact",
        "",
        d["contact"] or "not stated",
        "",
    ]
    return "\n".join(lines)


def card(d: dict) -> str:
    """The whole card: ``---``, the YAML metadata, ``---``, the Markdown."""
    meta = yaml.safe_dump(front_matter(d), sort_keys=False, allow_unicode=True)
    return f"---\n{meta}---\n\n{markdown(d)}"
