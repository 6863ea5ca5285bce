"""What an erasure changes in training's data (training/snapshots/erasure.py): labels of
fewer than k annotators leave the snapshots frozen with the person, and the lineage says
so; labels of k or more stay; perspective reports that read the person go; snapshots
from before them, checkpoints, evaluations and learning curves stay.

k = 2. Bob ranks the nurse task and Carol the pilot task; snapshot S0. Alice ranks the
nurse, pilot and judge tasks; snapshot S1. In S1 the nurse and pilot items pool two
annotators, the judge items Alice alone; the group "woman" (Alice, Bob) pools two on
the nurse items, Alice alone on the pilot and judge items.
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from privacy_claims import says

from annotation.access.scope import SYSTEM
from annotation.models import AnnotatorProfile, DemographicField
from annotation.models.studies import Erasure
from annotation.participants import services
from annotation.participants.erasure import erase_annotator
from training import selectors
from training.ml.examples import data_hash
from training.models import (
    Checkpoint,
    DatasetSnapshot,
    Evaluation,
    LearningCurve,
    PerspectiveReport,
    PerspectiveSummary,
)
from training.snapshots.services import create_snapshot, example_key, to_example


def _person(name: str, gender: str) -> AnnotatorProfile:
    profile = services.get_profile(get_user_model().objects.create_user(name, password="pw-1234"))
    services.give_consent(profile)
    services.save_demographics(profile, {"gender": gender})
    return profile


def _report(snapshot: DatasetSnapshot, version: int) -> Checkpoint:
    """A stored perspective report of a stand-in checkpoint (rows as the service writes)."""
    checkpoint = Checkpoint.objects.create(
        version=version,
        path=f"/nonexistent/v{version}",
        head_sha256="0" * 64,
        encoder_name="stand-in",
        encoder_identity={"name": "stand-in"},
        snapshot=snapshot,
        threshold=0.1,
    )
    common = {"checkpoint": checkpoint, "snapshot": snapshot, "field": "gender"}
    PerspectiveSummary.objects.create(
        **common, temperature=0.5, k=2, n_boot=10, seed=0, n_rankings=3, n_annotators=3
    )
    PerspectiveReport.objects.create(**common, group="woman", status="fewer_than_k")
    return checkpoint


@pytest.fixture
def frozen(db, settings, make_tasks, store_ranking):
    settings.STEREORANK = {**settings.STEREORANK, "GROUP_K": 2}
    DemographicField.objects.create(key="gender", label="Gender", choices=["woman", "man"])
    tasks = {o: make_tasks(1, 3, overlap=3, occupation=o)[0] for o in ("nurse", "pilot", "judge")}
    items = {o: sorted(t.items.values_list("pk", flat=True)) for o, t in tasks.items()}
    alice, bob, carol = _person("alice", "woman"), _person("bob", "woman"), _person("carol", "man")
    store_ranking(bob, tasks["nurse"], items["nurse"])
    store_ranking(carol, tasks["pilot"], items["pilot"][::-1])
    before = create_snapshot(seed=0, eval_fraction=0.5)
    for occupation in ("nurse", "pilot", "judge"):
        store_ranking(alice, tasks[occupation], items[occupation])
    after = create_snapshot(seed=0, eval_fraction=0.34)
    assert {r["item_id"] for r in after.examples} == {i for its in items.values() for i in its}
    assert set(after.group_labels["gender"]) == {"woman"}  # "man" is Carol alone
    checkpoint = _report(before, 1), _report(after, 2)
    Evaluation.objects.create(checkpoint=checkpoint[1], snapshot=after, metrics={}, predictions={})
    LearningCurve.objects.create(snapshot=after)
    return {"alice": alice, "items": items, "before": before, "after": after}


def _keys(items: list[int]) -> set[str]:
    return {example_key(i) for i in items}


def _check_pruned(frozen) -> None:
    items, after = frozen["items"], frozen["after"]
    hash_frozen = after.content_hash
    after.refresh_from_db()
    kept = {r["key"] for r in after.examples}
    assert kept == _keys(items["nurse"]) | _keys(items["pilot"])  # judge: Alice alone
    assert set(after.group_labels["gender"]["woman"]) == _keys(items["nurse"])
    assert (after.example_count, after.train_count + after.eval_count) == (6, 6)
    assert after.content_hash == data_hash([to_example(r) for r in after.examples])
    assert after.exclusions["erasures"] == {
        "k": 2,
        "labels_removed": 3,
        "group_labels_removed": 6,
        "frozen_hash": hash_frozen,
    }


@says(
    "From every snapshot frozen with the person's rankings, it removes each item's label that "
    "fewer than k annotators ranked, the person included, and each group's label of an item "
    "that fewer than k of that group ranked.",
    'Such a snapshot says so in its lineage: `exclusions["erasures"]` holds k, how many labels '
    "and group labels were removed, and the content hash it was frozen with.",
    "Labels that pooled k or more annotators stay in the snapshots frozen with them.",
)
def test_labels_of_fewer_than_k_go_and_the_lineage_says_so(frozen):
    before = frozen["before"]
    kept_before = (before.content_hash, before.examples, before.group_labels, before.exclusions)

    erase_annotator(frozen["alice"], via=Erasure.Via.STAFF)

    _check_pruned(frozen)
    before.refresh_from_db()  # frozen before Alice ranked: untouched
    assert (before.content_hash, before.examples, before.group_labels, before.exclusions) == (
        kept_before
    )


def test_an_erasure_cut_short_still_prunes_counting_the_person_in_every_group(frozen):
    alice = frozen["alice"]
    # The first step committed (demographics gone), the second did not run.
    alice.consents.active().update(withdrawn_at=timezone.now())
    AnnotatorProfile.objects.filter(pk=alice.pk).update(erased_at=timezone.now(), demographics={})

    erase_annotator(alice, via=Erasure.Via.STAFF)

    _check_pruned(frozen)


@says(
    "Checkpoints already trained (pooled and group heads), their evaluations and learning "
    "curves are kept.",
    "The snapshot API and admin count the erasures since each snapshot was frozen "
    "(`erasures_after`).",
    "A snapshot made after the erasure holds none of the erased rankings.",
)
def test_models_and_their_figures_stay_reports_that_read_the_person_go(frozen):
    before, after, items = frozen["before"], frozen["after"], frozen["items"]

    erase_annotator(frozen["alice"], via=Erasure.Via.STAFF)

    assert set(PerspectiveSummary.objects.values_list("snapshot", flat=True)) == {before.pk}
    assert set(PerspectiveReport.objects.values_list("snapshot", flat=True)) == {before.pk}
    assert Checkpoint.objects.count() == 2
    assert Evaluation.objects.filter(snapshot=after).exists()
    assert LearningCurve.objects.filter(snapshot=after).exists()
    marks = dict(selectors.snapshots(SYSTEM).values_list("pk", "erasures_after"))
    assert marks == {before.pk: 1, after.pk: 1}
    later = create_snapshot(seed=0, eval_fraction=0.5)
    assert dict(selectors.snapshots(SYSTEM).values_list("pk", "erasures_after"))[later.pk] == 0
    assert later.ranking_count == 2  # Bob's and Carol's
    assert {r["item_id"] for r in later.examples} == set(items["nurse"] + items["pilot"])
