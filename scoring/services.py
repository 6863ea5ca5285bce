"""Scoring and optimising prompts: the checks every interface shares, then the model.

The API, the commands and the checker page all come here, so a request is
refused the same way everywhere: limits from ``STEREORANK["SCORING"]``, and a
message that names the part that is wrong (``prompts[3] is not a string``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from django.conf import settings

from annotation.catalogue.loading import read_catalogue
from annotation.models import Occupation
from scoring.errors import RewriterFailed, ScoringError
from scoring.scorer import LoadedVersion, get_scorer
from scoring.serving import ServedEncoder
from training.errors import ml_refusals


def limits() -> dict:
    return settings.STEREORANK["SCORING"]


def check_text(value: object, where: str) -> str:
    """One prompt: a non-blank string of at most ``MAX_CHARS`` characters."""
    if not isinstance(value, str):
        raise ScoringError(f"{where} is not a string")
    if not value.strip():
        raise ScoringError(f"{where} is empty")
    most = limits()["MAX_CHARS"]
    if len(value) > most:
        raise ScoringError(f"{where} has {len(value)} characters; at most {most} are allowed")
    return value


def check_prompts(prompts: object) -> list[str]:
    """A non-empty list of at most ``MAX_PROMPTS`` prompts, each passing ``check_text``."""
    if not isinstance(prompts, list):
        raise ScoringError("prompts must be a list of strings")
    if not prompts:
        raise ScoringError("prompts is empty: give at least one prompt")
    most = limits()["MAX_PROMPTS"]
    if len(prompts) > most:
        raise ScoringError(f"too many prompts: {len(prompts)} given, at most {most} are allowed")
    return [check_text(p, f"prompts[{i}]") for i, p in enumerate(prompts)]


def _whole(value: object, low: float, high: float) -> bool:
    """Whether ``value`` is a whole number (an int, not a bool) from ``low`` to ``high``."""
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def check_version(version: object) -> int | None:
    """A version number (a positive whole number) or None for the active version."""
    if version is None:
        return None
    if not _whole(version, 1, math.inf):
        raise ScoringError(f"version must be a positive whole number, not {version!r}")
    return version


def check_group(group: object, loaded: LoadedVersion) -> str | None:
    """``FIELD:VALUE`` naming one of the version's group heads of k or more annotators
    (today's k); None for the pooled score. Refusals name the groups it can answer for."""
    if group is None or group == "":
        return None
    if not isinstance(group, str) or len(group) > 200:
        raise ScoringError("group must be a string FIELD:VALUE, e.g. age_band:45-54")
    heads = loaded.groups
    if heads is None:
        raise ScoringError(
            f"version {loaded.version} has no group heads: train one with --groups FIELD"
        )
    k = int(settings.STEREORANK["GROUP_K"])
    # sizes as the heads were trained (k re-applied, as to stored perspective reports)
    known = [g for g, n in zip(heads.groups, heads.sizes, strict=True) if n >= k]
    field, sep, value = group.partition(":")
    if not sep or field.strip() != heads.field or value.strip() not in known:
        named = ", ".join(f"{heads.field}:{g}" for g in known) or "none"
        raise ScoringError(
            f"version {loaded.version} has no group head {group!r}; known groups: {named}"
        )
    return value.strip()


def contested(disagreement: float | None, loaded: LoadedVersion) -> bool | None:
    """Whether people disagree about a prompt: its spread above the version's calibrated
    threshold (``training.ml.group_heads``); None without group heads."""
    if disagreement is None:
        return None
    return bool(disagreement > loaded.groups.threshold)


@dataclass(frozen=True)
class Scored:
    prompt: str
    score: float
    flagged: bool
    disagreement: float | None = None
    contested: bool | None = None


@dataclass(frozen=True)
class VersionReport:
    """What one version answered, with the threshold it flags prompts by and the encoder
    that served it."""

    version: int
    threshold: float
    threshold_basis: str
    encoder: ServedEncoder


@dataclass(frozen=True)
class ScoreReport(VersionReport):
    """Scores of some prompts by one version, with the version's scale (the range of its
    scores on its snapshot's prompts; None when never evaluated)."""

    results: list[Scored]
    scale: tuple[float, float] | None = None
    group: str | None = None  # FIELD:VALUE whose head answered; None: the pooled head
    disagreement_threshold: float | None = None  # None: the version has no group heads


def score_prompts(prompts: object, version: object = None, group: object = None) -> ScoreReport:
    """Score ``prompts`` with ``version`` (default: the active one), by the pooled head or
    ``group``'s (``FIELD:VALUE``), each with its disagreement where the version has heads."""
    texts = check_prompts(prompts)
    loaded = get_scorer().get(check_version(version))
    value = check_group(group, loaded)
    scores, spreads = loaded.score_groups(texts, value)
    flags = loaded.flags(scores)
    spreads = [None] * len(texts) if spreads is None else [float(d) for d in spreads]
    scale = loaded.scale or loaded.catalogue_scale(catalogue_prompts())
    heads = loaded.groups
    return ScoreReport(
        loaded.version,
        loaded.threshold,
        loaded.threshold_basis,
        loaded.encoder,
        [
            Scored(t, float(s), f, d, contested(d, loaded))
            for t, s, f, d in zip(texts, scores, flags, spreads, strict=True)
        ],
        scale,
        f"{heads.field}:{value}" if value else None,
        heads.threshold if heads else None,
    )


def catalogue_prompts() -> list[str]:
    """The packaged catalogue's prompt texts (every occupation, every kind)."""
    return [t for o in read_catalogue()["occupations"] for t in o["prompts"].values()]


def catalogue_occupations() -> list[str]:
    """Occupation names of the study (database) and of the packaged catalogue."""
    names = set(Occupation.objects.values_list("name", flat=True))
    names.update(o["name"] for o in read_catalogue()["occupations"])
    return sorted(names)


def detect_occupation(prompt: str, occupations: list[str] | None = None) -> str:
    """The one catalogue occupation ``prompt`` names (the longest when one name holds
    another, "nurse" in "nurse practitioner"); refused when none or several are named."""
    from training.ml.lexicon import occupation_regex

    spans = []
    for name in occupations if occupations is not None else catalogue_occupations():
        spans += [(m.start(), m.end(), name) for m in occupation_regex(name).finditer(prompt)]
    # a match inside a longer one ("nurse" in "nurse practitioner") does not count
    named = {
        name
        for start, end, name in spans
        if not any(s <= start and end <= e and (e - s) > (end - start) for s, e, _ in spans)
    }
    if not named:
        raise ScoringError("the prompt names no occupation of the catalogue: give the occupation")
    if len(named) > 1:
        raise ScoringError(
            f"the prompt names several occupations ({', '.join(sorted(named))}): "
            "give the occupation to keep"
        )
    return named.pop()


def make_rewriter():
    """The optimiser's rewriter named by ``SCORING["REWRITER"]``; the LLM one uses the
    ``TRAINING["OPENAI_*"]`` settings and the daily spending cap, as paraphrasing does."""
    from training.llm_budget import client_options
    from training.ml.optimise import make_rewriter as build

    name = limits()["REWRITER"]
    if name == "openai":
        t = settings.TRAINING
        client = {k: v for k, v in client_options().items() if k != "batch_size"}
        return build(
            "openai",
            base_url=t["OPENAI_BASE_URL"],
            model=t["OPENAI_MODEL"],
            api_key=t["OPENAI_API_KEY"],
            **client,
        )
    return build(name)


def check_n(n: object) -> int:
    """How many rewrites to ask for: a whole number from 1 to ``OPTIMISE_MAX_N``."""
    most = limits()["OPTIMISE_MAX_N"]
    if not _whole(n, 1, most):
        raise ScoringError(f"n must be a whole number from 1 to {most}, not {n!r}")
    return n


@dataclass(frozen=True)
class OptimiseReport(VersionReport):
    """What the optimiser found for one prompt, with the rewriter it used."""

    occupation: str
    rewriter: str
    result: object  # training.ml.optimise.OptimiseResult
    disagreement: float | None = None  # the original prompt's (None: no group heads)
    contested: bool | None = None


def optimise_prompt(
    prompt: object,
    n: object = 3,
    occupation: object = None,
    version: object = None,
    seed: int = 0,
) -> OptimiseReport:
    """Up to ``n`` rewrites of ``prompt`` that keep its occupation and pass the threshold."""
    from training.ml.lexicon import names_occupation
    from training.ml.optimise import optimise

    text = check_text(prompt, "prompt")
    count = check_n(n)
    if occupation is None or occupation == "":
        name = detect_occupation(text)
    else:
        name = check_text(occupation, "occupation").strip()
        if not names_occupation(text, name):
            raise ScoringError(f"the prompt does not name the occupation {name!r}")
    loaded: LoadedVersion = get_scorer().get(check_version(version))
    rewriter = make_rewriter()
    try:
        with ml_refusals(RewriterFailed, f"the {rewriter.name} rewriter failed: "):
            result = optimise(
                text,
                name,
                loaded.score,
                loaded.threshold,
                rewriter,
                n=count,
                rounds=limits()["OPTIMISE_ROUNDS"],
                per_round=limits()["OPTIMISE_PER_ROUND"],
                seed=seed,
            )
    finally:
        if hasattr(rewriter, "close"):
            rewriter.close()
    _, spread = loaded.score_groups([text])  # cached: the optimiser scored it first
    disagreement = None if spread is None else float(spread[0])
    return OptimiseReport(
        loaded.version,
        loaded.threshold,
        loaded.threshold_basis,
        loaded.encoder,
        name,
        rewriter.name,
        result,
        disagreement,
        contested(disagreement, loaded),
    )
