"""``training.ml`` has one error root: each error it raises on purpose is an ``MLError``
and keeps the built-in kind plain-Python callers caught before."""

import pytest

from training.ml.chat import ChatBudgetExceeded, ChatError, MalformedAnswer
from training.ml.checkpoints import CheckpointError
from training.ml.encoders.gate import GateRefused
from training.ml.encoders.identity import EncoderError, EncoderMismatch, EncoderNotFound
from training.ml.errors import MLError
from training.ml.optimise import RewriteBudgetExceeded, RewriteError
from training.ml.paraphrase import BudgetExceeded, ParaphraseError
from training.ml.train import TrainingCancelled


@pytest.mark.parametrize(
    "error, kind",
    [
        (ChatError, RuntimeError),
        (ChatBudgetExceeded, ChatError),
        (MalformedAnswer, ValueError),
        (CheckpointError, ValueError),
        (EncoderError, ValueError),
        (EncoderNotFound, EncoderError),
        (EncoderMismatch, EncoderError),
        (GateRefused, EncoderError),
        (ParaphraseError, RuntimeError),
        (BudgetExceeded, ParaphraseError),
        (RewriteError, RuntimeError),
        (RewriteBudgetExceeded, RewriteError),
        (TrainingCancelled, Exception),
    ],
)
def test_every_library_error_is_an_ml_error_of_its_old_kind(error, kind):
    assert issubclass(error, MLError) and issubclass(error, kind)
    with pytest.raises(MLError, match="why"):
        raise error("why")
