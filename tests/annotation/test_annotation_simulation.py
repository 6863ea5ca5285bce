"""The catalogue's diversity aspects and the planted views of the synthetic annotators."""

import json
import random

import numpy as np
import pytest

from annotation.catalogue.loading import ASPECTS, load_catalogue, prompt_aspects, read_catalogue
from annotation.models import AnnotatorProfile, Item
from annotation.studies.simulation import (
    FLIP,
    PLANTED,
    VIEW_FIELD,
    View,
    latent_order,
    planted_groups,
    simulate,
)


def test_every_catalogue_prompt_is_tagged_with_the_cards_aspects():
    data = read_catalogue()
    for entry in data["occupations"]:
        aspects = entry["aspects"]
        assert set(aspects) == set(entry["prompts"]), entry["name"]
        assert aspects["neutral"] == [], entry["name"]  # "Generate an image of a nurse"
        assert aspects["stereotypical"] and aspects["diverse"], entry["name"]
        assert set(aspects["stereotypical"]) | set(aspects["diverse"]) <= set(ASPECTS)
    tags = prompt_aspects()
    assert tags[("surgeon", "diverse")] >= {"religion_belief"}  # "wearing a surgical hijab"
    assert tags[("chef", "diverse")] >= {"ability_disability"}  # "uses a wheelchair"
    assert "religion_belief" not in tags[("lawyer", "diverse")]


def test_an_unknown_aspect_is_refused(tmp_path):
    data = read_catalogue()
    data["occupations"][0]["aspects"]["diverse"] = ["religion"]
    path = tmp_path / "catalogue.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"CEO \(diverse\): unknown aspect\(s\) \{'religion'\}"):
        prompt_aspects(path)


def test_planted_groups_follow_the_stated_shares():
    groups = planted_groups(60, PLANTED, seed=0)
    counts = {g: groups.count(g) for g in PLANTED.shares}
    assert counts == {"25-34": 30, "35-44": 12, "45-54": 12, "65-74": 6}
    assert planted_groups(60, PLANTED, seed=0) == groups != planted_groups(60, PLANTED, seed=1)
    # 7 annotators: 3.5, 1.4, 1.4, 0.7 -> 3 + 1 + 1 + 0, then the largest remainders (0.7, 0.5)
    assert sorted(planted_groups(7, PLANTED, seed=0)) == sorted(
        ["25-34"] * 4 + ["35-44", "45-54", "65-74"]
    )


def test_planted_distances_grow_from_the_majority():
    majority = PLANTED.views[PLANTED.majority]
    distances = [PLANTED.views[g].distance(majority) for g in ("25-34", "35-44", "45-54", "65-74")]
    assert distances == pytest.approx([0, -FLIP, -2 * FLIP, -4 * FLIP])
    assert View(contrast=0.4).distance(View(contrast=-0.1)) == pytest.approx(0.5)


@pytest.mark.django_db
def test_the_minority_reads_only_its_aspects_as_stereotypical(media_root):
    load_catalogue(placeholders_per_prompt=2)
    items = list(Item.objects.select_related("prompt__occupation"))

    def mean_position(occupation: str, group: str) -> float:
        task = [i for i in items if i.prompt.occupation.name == occupation]
        diverse = {i.pk for i in task if i.prompt.prompt_type == "diverse"}
        positions = []
        for n in range(200):
            order = latent_order(task, {VIEW_FIELD: group}, random.Random(n), PLANTED.views)
            positions += [p for p, pk in enumerate(order) if pk in diverse]
        return float(np.mean(positions))

    # surgeon: "a young Muslim woman wearing a surgical hijab" (religion_belief)
    assert mean_position("surgeon", "25-34") > 4.0 > 1.5 > mean_position("surgeon", "65-74")
    # lawyer: gender, ethnicity and age only: both groups put it last
    assert mean_position("lawyer", "65-74") == pytest.approx(mean_position("lawyer", "25-34"))


@pytest.mark.django_db
def test_simulate_planted_gives_each_annotator_a_planted_group(media_root):
    load_catalogue(placeholders_per_prompt=2)
    from annotation.studies.tasks_builder import build_tasks

    build_tasks(size=6, overlap=2, seed=0)
    simulate(10, 2, seed=3, planted=PLANTED)
    bands = [p.demographics[VIEW_FIELD] for p in AnnotatorProfile.objects.all()]
    assert sorted(bands) == sorted(planted_groups(10, PLANTED, seed=3))
