"""The scoring side's refusals (kinds and translation: ``core.errors``)."""

from core.errors import Conflict, NotFound, StereorankError


class ScoringError(StereorankError):
    """A scoring or optimising request refused as asked; the message says which part."""


class NoActiveVersion(ScoringError, Conflict):
    """Nothing to score with: no version is active (promote one) and none was named."""


class RewriterFailed(ScoringError, Conflict):
    """The rewriter (the LLM behind it) gave no usable answer; try again later."""


class UnknownUser(ScoringError, NotFound):
    """No account has that user name."""


class EncoderNotGated(ScoringError, Conflict):
    """The deployment serves a quantized copy that has not passed the accuracy gate for the
    version (and staff did not choose the fp32 fallback); the message names the command."""
