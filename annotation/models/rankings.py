"""Rankings: one annotator's order of a task's items, and its long form (one row per item)."""

from django.db import models

from annotation.models.catalogue import Item
from annotation.models.people import AnnotatorProfile
from annotation.models.tasks import RankingTask


class Ranking(models.Model):
    """One annotator's answer to a task: its items in tiers, most (0) to least
    stereotypical (``annotation.stats.tiers``)."""

    # No index of its own: the unique (task, annotator) leads with it (one write less a submit).
    task = models.ForeignKey(
        RankingTask, on_delete=models.PROTECT, related_name="rankings", db_index=False
    )
    annotator = models.ForeignKey(
        AnnotatorProfile, on_delete=models.PROTECT, related_name="rankings"
    )
    order = models.JSONField(help_text="Item ids, most to least stereotypical, tier after tier.")
    # The tiers (lists of item ids judged equal), only when one holds more than one item;
    # null: every item of ``order`` is a tier of its own (a strict ranking).
    tiers = models.JSONField(null=True, blank=True)
    shown_order = models.JSONField(help_text="Item ids in the order they were shown.")
    seconds_spent = models.FloatField(null=True, blank=True)
    # The browser window's width in CSS pixels when the ranking was submitted (none before
    # it was recorded, or from a client that does not say): which layout the annotator saw.
    viewport_width = models.PositiveIntegerField(null=True, blank=True)
    # The language the participant read the portal in when they ranked (blank before
    # issue 39, and when unknown).
    language = models.CharField(max_length=16, blank=True, default="", db_default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["task", "annotator"], name="one_ranking_per_pair")
        ]


class RankedItem(models.Model):
    """One row per (ranking, item): the long form labels and agreement read.

    ``position`` is the index of the item's tier (``annotation.stats.tiers``): items judged
    equal share it; a strict ranking's positions are 0 to K - 1."""

    # No index of its own: the unique (ranking, item) and the (ranking, position) index
    # lead with it (K index writes less a submit).
    ranking = models.ForeignKey(
        Ranking, on_delete=models.CASCADE, related_name="positions", db_index=False
    )
    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="positions")
    position = models.PositiveSmallIntegerField()
    shown_position = models.PositiveSmallIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["ranking", "item"], name="unique_ranked_item"),
        ]
        # Not unique since tiers (issue 40): items ranked equal share a position.
        indexes = [models.Index(fields=["ranking", "position"], name="ranked_item_position")]
