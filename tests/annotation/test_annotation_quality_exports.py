"""Exports with quality: the rankings' flags, the preference pairs TRL reads, export_pairs."""

import io
import json
from itertools import combinations

import pytest
from django.core.management import call_command

from annotation.models import AnnotatorStatus, Item, Prompt, RankingTask, TaskItem
from annotation.quality import standing

pytestmark = pytest.mark.django_db


def ids(task) -> list[int]:
    return list(task.items.order_by("id").values_list("id", flat=True))


def lines(response) -> list[dict]:
    return [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]


@pytest.fixture
def exported(make_tasks, annotator, store_ranking, settings):
    """An ordinary task of 4 whose last two items share a prompt text, a check task and a
    gold task, ranked by ``ann``; ``bad`` (excluded) ranked the ordinary task too."""
    settings.STEREORANK = {**settings.STEREORANK, "GOLD_RATE": 0.0}
    (plain,) = make_tasks(1, k=4, overlap=2)
    a, b, c, d = ids(plain)
    # Two images of one prompt: d shows c's prompt.
    Item.objects.filter(pk=d).update(prompt=Item.objects.get(pk=c).prompt)
    (check,) = make_tasks(1, k=4)
    RankingTask.objects.filter(pk=check.pk).update(check_item=ids(check)[0], check_position=3)
    (gold,) = make_tasks(1, k=3)
    g = ids(gold)
    RankingTask.objects.filter(pk=gold.pk).update(
        is_gold=True, gold_reference={"pairs": [[g[0], g[2]], [g[1], g[2]]]}
    )
    ann = annotator("ann").profile
    store_ranking(ann, plain, [a, c, b, d], shown=[d, c, b, a])
    ch = ids(check)
    store_ranking(ann, check, [ch[1], ch[0], ch[2], ch[3]], shown=[ch[3], ch[2], ch[1], ch[0]])
    store_ranking(ann, gold, [g[0], g[2], g[1]], shown=[g[1], g[0], g[2]])  # one pair kept
    bad = annotator("bad").profile
    store_ranking(bad, plain, [a, b, c, d])  # in the shown order
    standing._move(bad, AnnotatorStatus.EXCLUDED, "test")
    return {"plain": plain, "check": check, "gold": gold, "staff": annotator("boss", staff=True)}


def test_ranking_rows_carry_status_and_quality_flags(exported):
    staff = exported["staff"]
    rows = lines(staff.get("/api/export/rankings/"))
    assert [r["task"] for r in rows] == [exported["plain"].pk, exported["check"].pk]
    plain, check = rows
    # ann failed one attention check: warned (one short of the limit), and still counts.
    assert plain["annotator_status"] == "warned"
    assert not plain["gold"] and not plain["untouched"]
    assert plain["check_item"] is None and plain["check_passed"] is None
    ch = ids(exported["check"])
    assert (check["check_item"], check["check_position"], check["check_passed"]) == (
        ch[0],
        3,
        False,  # the card was put second, not fourth
    )
    rows = lines(staff.get("/api/export/rankings/?include_left_out=true"))
    by = {(r["task"], r["annotator_status"]): r for r in rows}
    assert len(rows) == 4
    gold = by[(exported["gold"].pk, "warned")]
    assert gold["gold"] and gold["gold_score"] == 0.0  # (1 concordant - 1 discordant) / 2
    excluded = by[(exported["plain"].pk, "excluded")]
    assert excluded["untouched"] and not excluded["gold"]
    csv = b"".join(staff.get("/api/export/rankings/?format=csv").streaming_content).decode()
    header = csv.splitlines()[0].split(",")
    assert {"annotator_status", "gold", "gold_score", "check_passed", "untouched"} <= set(header)
    assert staff.get("/api/export/rankings/?include_left_out=maybe").status_code == 400


def test_pairs_have_margins_leave_out_identical_texts_and_the_check_card(exported):
    staff = exported["staff"]
    pairs = lines(staff.get("/api/export/pairs/"))
    a, b, c, d = ids(exported["plain"])
    texts = dict(Item.objects.values_list("id", "prompt__text"))
    expected = []
    # The check task's order without its card is ch[1], ch[2], ch[3].
    for order in ([a, c, b, d], ids(exported["check"])[1:]):
        for i, j in combinations(range(len(order)), 2):
            if texts[order[i]] != texts[order[j]]:
                expected.append((order[j], order[i], (j - i) / (len(order) - 1)))
    got = [(p["chosen_item"], p["rejected_item"], p["margin"]) for p in pairs]
    assert got == expected
    assert (d, c) not in {(p["chosen_item"], p["rejected_item"]) for p in pairs}  # same text
    assert ids(exported["check"])[0] not in {p["chosen_item"] for p in pairs} | {
        p["rejected_item"] for p in pairs
    }
    assert not {p["task"] for p in pairs} & {exported["gold"].pk}  # gold never feeds pairs
    kept = lines(staff.get("/api/export/pairs/?keep_identical_texts=1"))
    assert len(kept) == len(pairs) + 1
    same = [p for p in kept if p["chosen"] == p["rejected"]]
    assert [(p["chosen_item"], p["rejected_item"], p["margin"]) for p in same] == [(d, c, 2 / 3)]


def test_pairs_are_what_trls_reward_trainer_reads(exported):
    pairs = lines(exported["staff"].get("/api/export/pairs/"))
    assert pairs
    # TRL RewardTrainer: "chosen" and "rejected" texts, an optional float "margin".
    for p in pairs:
        assert isinstance(p["chosen"], str) and isinstance(p["rejected"], str)
        assert p["chosen"] != p["rejected"]
        assert isinstance(p["margin"], float) and 0 < p["margin"] <= 1
        assert p["chosen_image_url"].startswith("http://testserver/media/items/")
        assert p["chosen_prompt_type"] in {"stereotypical", "neutral", "diverse"}
    # A columnar loader (datasets' JSON builder) needs one key set and one type per column.
    assert len({tuple(p) for p in pairs}) == 1
    for key in pairs[0]:
        assert len({type(p[key]) for p in pairs}) == 1, key


def test_export_pairs_command_writes_the_same_pairs(exported, tmp_path):
    out = tmp_path / "pairs.jsonl"
    call_command(
        "export_pairs",
        "--out",
        str(out),
        "--base-url",
        "https://rank.example.org/",
        stdout=io.StringIO(),
    )
    written = [json.loads(line) for line in out.read_text().splitlines()]
    served = lines(exported["staff"].get("/api/export/pairs/"))
    strip = ("chosen_image_url", "rejected_image_url")
    assert [{k: v for k, v in p.items() if k not in strip} for p in written] == [
        {k: v for k, v in p.items() if k not in strip} for p in served
    ]
    assert written[0]["chosen_image_url"].startswith("https://rank.example.org/media/items/")
    said = io.StringIO()
    call_command("export_pairs", "--out", str(out), "--keep-identical-texts", stderr=said)
    assert len(out.read_text().splitlines()) == len(written) + 1
    assert said.getvalue().startswith(f"{len(written) + 1} pairs written to {out}")


def test_pairs_leave_two_images_of_one_prompt_out_whatever_their_positions(
    make_tasks, annotator, store_ranking
):
    (task,) = make_tasks(1, k=3)
    x, y, z = ids(task)
    prompt = Prompt.objects.get(items=x)
    Item.objects.filter(pk__in=[y, z]).update(prompt=prompt)  # all three: one text
    store_ranking(annotator("ann").profile, task, [z, x, y], shown=[x, y, z])
    staff = annotator("boss", staff=True)
    assert lines(staff.get("/api/export/pairs/")) == []
    assert len(lines(staff.get("/api/export/pairs/?keep_identical_texts=true"))) == 3
    assert TaskItem.objects.count() == 3
