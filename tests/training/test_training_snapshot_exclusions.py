"""A snapshot records what it left out (excluded annotators, gold tasks, check cards)."""

import pytest

from annotation.models import AnnotatorProfile, AnnotatorStatus, Ranking, RankingTask
from annotation.quality import standing
from annotation.rankings.exports import pseudonym
from annotation.rankings.selectors import EXCLUDED, GOLD
from training.snapshots.services import create_snapshot

pytestmark = pytest.mark.django_db


def test_snapshot_lineage_names_the_excluded_by_pseudonym_and_counts_the_rest(study, store_ranking):
    profiles = list(AnnotatorProfile.objects.filter(rankings__isnull=False).distinct())
    bad, other = profiles[0], profiles[1]
    standing._move(bad, AnnotatorStatus.EXCLUDED, "test")
    n_bad = bad.rankings.count()
    # A gold task (items of one occupation, reference = their id order) ranked by another.
    source = RankingTask.objects.filter(is_gold=False).first()
    items = list(source.items.order_by("id").values_list("id", flat=True))
    gold = RankingTask.objects.create(
        occupation=source.occupation, is_gold=True, gold_reference={"order": items}
    )
    gold.items.set(items)
    store_ranking(other, gold, items, shown=items[::-1])
    # An attention check on a task someone other than ``bad`` ranked.
    checked = Ranking.objects.exclude(annotator=bad).exclude(task=gold).first().task
    card = checked.items.order_by("id").first().pk
    RankingTask.objects.filter(pk=checked.pk).update(check_item=card, check_position=0)

    snap = create_snapshot(include_synthetic=True)
    total = Ranking.objects.count()
    assert snap.ranking_count == total - n_bad - 1
    assert snap.exclusions == {
        "annotators": {pseudonym(bad.user_id): {EXCLUDED: n_bad}},
        "rankings": {EXCLUDED: n_bad, GOLD: 1},
        "check_cards": 1,
    }
    labelled = {row["item_id"] for row in snap.examples}
    assert card not in labelled  # the card was only in the checked task
    assert not labelled & set(bad.rankings.values_list("positions__item_id", flat=True))
