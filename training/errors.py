"""The training side's refusals, one class per concept (kinds and translation: ``core.errors``),
and ``ml_refusals``: the one translation of the ``training.ml`` library's errors into them."""

from collections.abc import Iterator
from contextlib import contextmanager

from core.errors import Conflict, NotFound, StereorankError
from training.ml.errors import MLError


class TrainingError(StereorankError):
    """Base of the training side's refusals."""


class SnapshotError(TrainingError):
    """No snapshot can be made from what is there; the message says why."""


class NothingToSnapshot(SnapshotError, Conflict):
    """No rankings count yet: a state, not a bad request."""


class AugmentationError(TrainingError):
    """An augmentation that cannot be requested or run as asked."""


class RunError(TrainingError):
    """A training run that cannot be started, cancelled or finished as asked."""


class RunConflict(RunError, Conflict):
    """The run is already in a state that refuses the request (finished, cancelled)."""


class RegistryError(TrainingError):
    """A registry operation refused: unknown version, nothing to roll back, bad file."""


class VersionNotFound(RegistryError, NotFound):
    """No checkpoint has that version."""


class RegistryConflict(RegistryError, Conflict):
    """The registry is already in the state asked for."""


class SamplerRefused(TrainingError):
    """The active sampler cannot score with this version (its files, its encoder)."""


class GroupsFall(RegistryConflict):
    """A promotion refused by the group check: a group clearly loses alignment."""


class ScheduleError(TrainingError):
    """A retraining schedule's settings that cannot be used."""


class EvaluationPending(RegistryConflict):
    """A comparison needs evaluations that have not been made yet."""

    def __init__(self, snapshot, checkpoints):
        names = " and ".join(f"v{c.version}" for c in checkpoints)
        super().__init__(f"{names} not evaluated on snapshot {snapshot.pk} yet")
        self.snapshot = snapshot
        self.checkpoints = list(checkpoints)


class PerspectiveError(TrainingError):
    """A perspective report that cannot be computed or compared as asked."""


class UnknownField(PerspectiveError, NotFound):
    """No demographic field has that key."""


class PerspectivesPending(PerspectiveError, Conflict):
    """Reports that a comparison needs have not been computed yet."""

    def __init__(self, snapshot, field, checkpoints):
        names = " and ".join(f"v{c.version}" for c in checkpoints)
        super().__init__(f"no {field} report of {names} on snapshot {snapshot.pk} yet")
        self.snapshot = snapshot
        self.field = field
        self.checkpoints = list(checkpoints)


class ReportsComputing(PerspectiveError, Conflict):
    """A promotion's group check needs perspective reports that are queued, not stored."""


class LearningCurveError(TrainingError):
    """A learning curve that cannot be computed as asked (too few rankings, bad draws)."""


class QuantizationError(TrainingError):
    """A quantized encoder that cannot be exported, gated or served as asked."""


class QuantizationRefused(QuantizationError):
    """The copy failed the accuracy gate, or was never gated for this checkpoint."""


@contextmanager
def ml_refusals(error: type[StereorankError], prefix: str = "") -> Iterator[None]:
    """Where a service calls ``training.ml``: inside, the library's ``MLError`` (an unknown
    encoder, a damaged checkpoint, a failed rewriter...) becomes ``error`` with ``prefix``
    and the library's message; anything else stays as it is (a bug stays loud)."""
    try:
        yield
    except MLError as exc:
        raise error(f"{prefix}{exc}") from exc


class ReleaseError(TrainingError):
    """A dataset release that cannot be written or pushed as asked (nothing published)."""


class NothingToRelease(ReleaseError, Conflict):
    """No ranking of the snapshot may be released: no consent allowed it (a state)."""


class ImageGenerationRefused(TrainingError):
    """A validation study's images cannot be generated (no generator, or it failed)."""
