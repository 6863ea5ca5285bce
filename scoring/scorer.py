"""One scorer per process: checkpoints (encoder + head) loaded once, scored in batches.

Freshness: each call without a version first asks which version is active
(``selectors.active_version``: one indexed row, one column). A promotion or a
rollback, made by any process, is therefore seen on the next request, without
a restart; weights are read from disk only when a version is first needed.
Loaded versions sit in a small LRU (``STEREORANK["SCORING"]["VERSIONS_LOADED"]``,
default 2: the active one and one asked for by number). Versions never change
once registered; the encoder serving one is the deployment's setting, through
its gated copy when that is a quantized one (``scoring.serving``), and the gate's
verdict is read again on each request (one query), so a gate refused, passed or
tightened since is seen without a restart. Encoders are shared with the rest of
the process (``training.storage.encoders``), and texts go through the embedding cache, so
a prompt already embedded for training or an earlier request is not encoded
again. torch is imported on first load, not with this module.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from django.conf import settings

from scoring import selectors, serving
from scoring.errors import NoActiveVersion
from scoring.serving import ServedEncoder
from training.storage import encoders
from training.storage.encoders import Gated

if TYPE_CHECKING:
    from training.ml.cache import EmbeddingCache


@dataclass(frozen=True)
class LoadedVersion:
    """A registry version ready to score: its model on the encoder serving it, threshold
    and the threshold's basis."""

    version: int
    threshold: float
    threshold_basis: str
    gated: Gated
    encoder: ServedEncoder
    checkpoint_id: int
    snapshot_id: int | None
    scale: tuple[float, float] | None = None
    """The range of its scores on its snapshot's prompts (``selectors.score_scale``); None
    for a version never evaluated, whose ``catalogue_scale`` stands in."""
    _catalogue: list = field(default_factory=list, repr=False, compare=False)

    @property
    def model(self):
        """The reward model (``training.ml.model.RewardModel``)."""
        return self.gated.model

    def score(self, prompts: Sequence[str]) -> np.ndarray:
        """Scores of ``prompts`` (float64, higher = more diverse), one batched pass through
        the embedding cache: the accuracy gate's own path."""
        return self.gated.score(prompts).astype(np.float64)

    @property
    def groups(self):
        """Its group heads (``training.ml.group_heads.GroupHeads``), or None."""
        return self.gated.model.groups

    def score_groups(
        self, prompts: Sequence[str], group: str | None = None
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """``(scores, disagreement)`` from one pass: the pooled head's scores or group
        ``group``'s, and the spread of the group heads (None without group heads)."""
        scores, spread = self.gated.model.score_groups(prompts, self.gated.cache, group)
        return scores.astype(np.float64), None if spread is None else spread.astype(np.float64)

    def catalogue_scale(self, prompts: Sequence[str]) -> tuple[float, float]:
        """The range of its scores on the packaged catalogue's prompts: the scale of a
        version never evaluated on a snapshot (an imported seed), scored once."""
        if not self._catalogue:  # once per loaded version (a list: the dataclass is frozen)
            scores = self.score(prompts)
            self._catalogue.append((float(scores.min()), float(scores.max())))
        return self._catalogue[0]

    def flags(self, scores: np.ndarray) -> list[bool]:
        """The model card's rule: flagged (stereotypical) when ``score < threshold``."""
        return [bool(s < self.threshold) for s in scores]


class Scorer:
    """Loaded versions by number, least recently used dropped past ``capacity``."""

    def __init__(self, capacity: int = 2, device: str = "cpu") -> None:
        if capacity < 1:
            raise ValueError(f"a scorer keeps at least one version loaded, not {capacity}")
        self.capacity = capacity
        self.device = device
        self.loads = 0  # versions read from disk, for tests and the benchmark
        self._loaded: OrderedDict[int, LoadedVersion] = OrderedDict()
        self._lock = threading.Lock()
        self._cache: EmbeddingCache | None = None

    def get(self, version: int | None = None) -> LoadedVersion:
        """Version ``version``, or the active one; loaded on first use.

        ``NoActiveVersion`` when none is active and none is named;
        ``VersionNotFound`` for an unknown number.
        """
        if version is None:
            version = selectors.active_version()
            if version is None:
                raise NoActiveVersion("no version is active: promote one in the registry")
        with self._lock:
            loaded = self._loaded.get(version)
            if loaded is not None and not serving.still_served(
                loaded.checkpoint_id, loaded.snapshot_id, loaded.encoder
            ):
                loaded = None
            if loaded is None:
                loaded = self._load(version)
                self._loaded[version] = loaded
                while len(self._loaded) > self.capacity:
                    self._loaded.popitem(last=False)
            self._loaded.move_to_end(version)
            return loaded

    def loaded_versions(self) -> list[int]:
        """Versions in memory, least recently used first."""
        return list(self._loaded)

    def _load(self, version: int) -> LoadedVersion:
        row = selectors.checkpoint(version)
        if self._cache is None:
            self._cache = encoders.embedding_cache()
        gated, served = serving.load(row, self.device, self._cache)
        self.loads += 1
        threshold, basis = row.threshold, row.threshold_basis
        if gated.gate is not None and "copy_threshold" in gated.gate.metrics:
            # A gated copy flags by its own threshold, calibrated against fp32's flags.
            m = gated.gate.metrics
            threshold = float(m["copy_threshold"])
            basis = (
                f"{served.label}'s own threshold, calibrated against fp32's flags (at "
                f"{row.threshold:.4f}: {basis}) on {m.get('calibrated_on', '?')} training "
                f"prompts (gate {gated.gate.pk})"
            )
        return LoadedVersion(
            row.version,
            threshold,
            basis,
            gated,
            served,
            row.pk,
            row.snapshot_id,
            selectors.score_scale(row),
        )


_scorer: Scorer | None = None
_scorer_lock = threading.Lock()


def get_scorer() -> Scorer:
    """This process's scorer, made on first use from ``STEREORANK["SCORING"]``."""
    global _scorer
    with _scorer_lock:
        if _scorer is None:
            limits = settings.STEREORANK["SCORING"]
            _scorer = Scorer(limits["VERSIONS_LOADED"], limits["DEVICE"])
        return _scorer


def reset_scorer() -> None:
    """Forget every loaded version (tests; settings that changed)."""
    global _scorer
    with _scorer_lock:
        _scorer = None
