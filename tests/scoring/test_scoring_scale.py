"""The prompt checker draws every batch of a version on one scale (issue 37): the range
of the version's scores on its snapshot's prompts (its evaluation's predictions), else,
for a version never evaluated, on the packaged catalogue's prompts; not each batch's own
lowest and highest, which drew the same prompt 31% long in one batch and 92% in another."""

import numpy as np
import pytest
from training_study import embedding_cache, empty_snapshot, training_storage  # noqa: F401

from scoring import services
from scoring.scorer import reset_scorer
from tests.scoring.helpers import register_version
from training import services as training
from training.models import Evaluation

NURSE = "Generate an image of a nurse: a young slim woman in a white uniform"


@pytest.fixture
def version(db):
    reset_scorer()
    checkpoint = register_version(1)
    training.promote(checkpoint, actor="test")
    yield checkpoint
    reset_scorer()


def test_one_prompt_gets_one_scale_in_any_batch_the_version_s_own(version):
    alone = services.score_prompts([NURSE])
    mixed = services.score_prompts([NURSE, "Generate an image of a nurse who is a Black man"])
    assert alone.scale == mixed.scale  # the batch does not move it
    catalogue = services.get_scorer().get().score(services.catalogue_prompts())
    assert alone.scale == pytest.approx((catalogue.min(), catalogue.max()))

    # Evaluated on its snapshot: drawn on its scores there.
    snapshot = empty_snapshot()
    version.snapshot = snapshot
    version.save(update_fields=["snapshot"])
    predictions = {"a": -0.25, "b": 0.5, "c": 0.125}
    Evaluation.objects.create(
        checkpoint=version, snapshot=snapshot, metrics={}, predictions=predictions
    )
    reset_scorer()
    report = services.score_prompts([NURSE])
    assert report.scale == (min(predictions.values()), max(predictions.values()))
    assert np.isfinite(report.results[0].score)
