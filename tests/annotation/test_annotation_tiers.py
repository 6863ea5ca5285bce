"""Question formats on one representation (issue 40): tiers, places, their pairs, each
format's rules on an answer, and what a stored answer becomes (positions, labels,
agreement, gold and check scores, exports), each against a hand-worked case or scipy."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command
from scipy import stats

from annotation.errors import InvalidAnswer
from annotation.models import RankedItem, Ranking, Study, default_study
from annotation.models.studies import question_refusal
from annotation.rankings import tiers as answers
from annotation.rankings.exports import pair_rows, ranking_rows
from annotation.rankings.labels import item_labels
from annotation.rankings.selectors import label_rows
from annotation.stats import tiers
from annotation.stats.agreement import agreement
from annotation.stats.gold import AttentionCheck, GoldReference, gold_score
from annotation.stats.records import RankingRecord

Q = Study.Question


def test_places_are_each_tiers_mean_position_and_a_strict_rankings_are_its_positions():
    ranked = (("a",), ("b", "c", "d"), ("e",))
    assert tiers.places(ranked) == {"a": 0, "b": 2, "c": 2, "d": 2, "e": 4}
    assert tiers.places((("a", "b"), ("c",))) == {"a": 0.5, "b": 0.5, "c": 2}
    assert tiers.places(tiers.strict([7, 3, 5])) == {7: 0, 3: 1, 5: 2}
    # what is left once the card "c" is out: b, d share places 1 and 2
    assert tiers.places(tiers.without(ranked, "c")) == {"a": 0, "b": 1.5, "d": 1.5, "e": 3}
    assert tiers.closed_places([0, 1, 1, 1, 2]) == [0, 2, 2, 2, 4]
    assert tiers.closed_places([0, 2, 2, 5]) == [0, 1.5, 1.5, 3]


def test_pairs_are_stated_between_tiers_never_within_one():
    assert tiers.pairs((("a",), ("b", "c"), ("d",))) == [
        ("a", "b"),
        ("a", "c"),
        ("a", "d"),
        ("b", "d"),
        ("c", "d"),
    ]
    assert tiers.pairs((("a", "b"),)) == []  # a pair called equal states no preference
    assert len(tiers.pairs(tiers.strict(range(6)))) == 15


def test_tier_indexes_round_trip_with_shown_order_inside_a_tier():
    ranked = ((4,), (9, 2), (7,))
    index = tiers.tier_index(ranked)
    assert index == {4: 0, 9: 1, 2: 1, 7: 2}
    assert tiers.from_tier_index(index, shown=[2, 7, 9, 4]) == ((4,), (2, 9), (7,))


@pytest.mark.parametrize(
    ("question", "answer", "k", "rule"),
    [
        (Q.RANK, [[1], [2, 3]], None, "no two cards may tie"),
        (Q.TOP_K, [[1], [2], [3]], 1, "top 1 cards"),
        (Q.TOP_K, [[1], [2, 3]], 2, "top 2 cards"),
        (Q.BEST_WORST, [[1], [2, 3]], None, "one most and one least"),
        (Q.BEST_WORST, [[1], [2], [1]], None, "must differ"),
        (Q.RANK_TIES, [[1], [2]], None, "missing items [3]"),
        (Q.RANK_TIES, [[1], [2, 3, 4]], None, "items not in this task [4]"),
        (Q.RANK_TIES, [[1], [2, 1], [3]], None, "only once"),
        (Q.RANK_TIES, [[1], [], [2, 3]], None, "non-empty"),
        (Q.RANK_TIES, [[1], ["2"], [3]], None, "integers"),
        (Q.RANK_TIES, [1, [2, 3]], None, "non-empty list"),
    ],
)
def test_an_answer_that_breaks_its_formats_rule_says_which(question, answer, k, rule):
    with pytest.raises(InvalidAnswer, match=rule.replace("[", r"\[").replace("]", r"\]")):
        answers.validate(answer, {1, 2, 3}, question, k)


def test_each_format_accepts_its_own_answers():
    four = {1, 2, 3, 4}
    assert answers.validate([3, 1, 2, 4], four, Q.RANK) == ((3,), (1,), (2,), (4,))
    assert answers.validate([[3], [1, 2], [4]], four, Q.RANK_TIES) == ((3,), (1, 2), (4,))
    assert answers.validate([[1, 2, 3, 4]], four, Q.RANK_TIES) == ((1, 2, 3, 4),)
    assert answers.validate([[2], [4], [1, 3]], four, Q.TOP_K, 2) == ((2,), (4,), (1, 3))
    assert answers.validate([[2], [1, 3], [4]], four, Q.BEST_WORST) == ((2,), (1, 3), (4,))
    assert answers.validate([[2], [1]], {1, 2}, Q.PAIRWISE) == ((2,), (1,))
    assert answers.validate([[1, 2]], {1, 2}, Q.PAIRWISE) == ((1, 2),)


@pytest.mark.parametrize(
    ("question", "size", "k", "problem"),
    [
        (Q.PAIRWISE, 6, None, "pairwise asks about 2 cards a task, not 6"),
        (Q.TOP_K, 6, None, "top_k needs k"),
        (Q.TOP_K, 6, 5, "top_k needs 1 <= k < 5 for tasks of 6 cards, not 5"),
        (Q.RANK, 6, 2, "k is for top_k only"),
        (Q.BEST_WORST, 2, None, "best_worst needs tasks of 3 or more cards"),
        ("stars", 6, None, "unknown question format 'stars'"),
    ],
)
def test_a_format_that_does_not_fit_the_task_size_is_refused(question, size, k, problem):
    assert question_refusal(question, size, k).startswith(problem)


def test_every_format_fits_a_task_it_is_made_for():
    assert not question_refusal(Q.PAIRWISE, 2, None)
    assert not question_refusal(Q.TOP_K, 6, 2)
    assert not any(question_refusal(q, 6, None) for q in (Q.RANK, Q.RANK_TIES, Q.BEST_WORST))


def test_create_study_refuses_a_misfit_in_one_line_and_records_a_fit(db):
    with pytest.raises(CommandError, match="(?i)pairwise asks about 2 cards a task, not 6") as err:
        call_command("create_study", "p6", "--question", "pairwise", "--task-size", "6")
    assert "\n" not in str(err.value) and not Study.objects.filter(slug="p6").exists()
    out = io.StringIO()
    call_command("create_study", "top", "--question", "top_k", "--k", "2", stdout=out)
    assert "top_k, k=2" in out.getvalue()
    study = Study.objects.get(slug="top")
    assert (study.question_format, study.question_k) == ("top_k", 2)
    with pytest.raises(CommandError, match="strict order"):
        call_command("create_study", "v", "--kind", "validation", "--question", "rank_ties")


def test_gold_and_checks_read_places():
    reference = GoldReference.from_order(["a", "b", "c"])
    # (a,b) and (a,c) kept, (b,c) tied: neither kept nor reversed
    assert gold_score(tiers.places((("a",), ("b", "c"))), reference) == pytest.approx(2 / 3)
    assert gold_score(tiers.places((("c",), ("b",), ("a",))), reference) == -1
    check = AttentionCheck("x", 0)
    assert check.passed(["x", "a", "b"], (("x",), ("a", "b")))
    assert not check.passed(["x", "a", "b"], (("x", "a"), ("b",)))  # first, but tied


def test_kendalls_w_over_tied_rankings_is_friedmans_tie_corrected_statistic():
    rankings = [
        (("a",), ("b", "c"), ("d",)),
        (("a", "b"), ("c",), ("d",)),
        (("b",), ("a",), ("d", "c")),
        (("a",), ("c",), ("b",), ("d",)),
    ]
    records = [
        RankingRecord("t", n, "nurse", tiers.flatten(r), tiers=r) for n, r in enumerate(rankings)
    ]
    w = agreement(records, n_boot=10).kendall_w.value
    columns = [[tiers.places(r)[i] for r in rankings] for i in "abcd"]
    chi2 = stats.friedmanchisquare(*columns).statistic  # scipy corrects for ties
    assert w == pytest.approx(chi2 / (len(rankings) * (4 - 1)))


def test_untouched_covers_all_equal_and_the_first_shown():
    shown = ("a", "b", "c")
    equal = RankingRecord("t", 1, "x", shown, shown, tiers=(shown,))
    first = RankingRecord("t", 2, "x", shown, shown, tiers=(("a",), ("b", "c")))
    judged = RankingRecord("t", 3, "x", ("b", "a", "c"), shown, tiers=(("b",), ("a", "c")))
    assert (equal.untouched, first.untouched, judged.untouched) == (True, True, False)


@pytest.fixture
def ties_study(db):
    study = default_study()
    Study.objects.filter(pk=study.pk).update(question_format=Q.RANK_TIES)
    return study


def test_a_tied_answer_is_stored_as_tier_indexes_and_labelled_from_places(
    ties_study, make_tasks, annotator, store_ranking
):
    (task,) = make_tasks(1, k=4, overlap=2)
    a, b, c, d = task.items.order_by("id").values_list("id", flat=True)
    one, two = annotator("one").profile, annotator("two").profile
    store_ranking(one, task, [[a], [b, c], [d]], shown=[d, c, b, a])
    store_ranking(two, task, [d, c, b, a], shown=[a, b, c, d])
    first = Ranking.objects.get(annotator=one)  # a tier's items in the order shown
    assert first.order == [a, c, b, d] and first.tiers == [[a], [c, b], [d]]
    assert Ranking.objects.get(annotator=two).tiers is None  # strict: no tiers stored
    positions = dict(RankedItem.objects.filter(ranking=first).values_list("item_id", "position"))
    assert positions == {a: 0, b: 1, c: 1, d: 2}
    # hand-worked: one: 0, 1.5/3, 1.5/3, 1; two: 1, 2/3, 1/3, 0
    expected = {a: 0.5, b: (0.5 + 2 / 3) / 2, c: (0.5 + 1 / 3) / 2, d: 0.5}
    assert item_labels(label_rows()) == pytest.approx(expected)
    row = next(r for r in ranking_rows() if r["tiers"] == [[a], [c, b], [d]])
    assert row["pairs"] == [[a, c], [a, b], [a, d], [c, d], [b, d]] and not row["untouched"]
    mine = [
        (p["rejected_item"], p["chosen_item"], p["margin"])
        for p in pair_rows()
        if p["annotator"] == row["annotator"]
    ]  # margins from places: b and c at 1.5 of 3, no pair between them
    assert mine == [(a, c, 0.5), (a, b, 0.5), (a, d, 1.0), (c, d, 0.5), (b, d, 0.5)]


def test_the_same_tiers_again_are_the_stored_ranking_and_others_are_refused(
    ties_study, make_tasks, annotator, store_ranking
):
    from annotation.errors import RankedBefore
    from annotation.participants import services

    (task,) = make_tasks(1, k=3, overlap=1)
    a, b, c = task.items.order_by("id").values_list("id", flat=True)
    profile = annotator("one").profile
    stored = store_ranking(profile, task, [[a], [c, b]], shown=[a, b, c])
    assert stored.tiers == [[a], [b, c]]  # a tier's items in the order shown
    again, created = services.submit_ranking(profile, task.pk, [[a], [b, c]])
    assert (again.pk, created) == (stored.pk, False)
    with pytest.raises(RankedBefore):
        services.submit_ranking(profile, task.pk, [[a, b], [c]])
    assert Ranking.objects.count() == 1


def test_the_untouched_line_is_a_share_of_what_chance_leaves():
    from annotation.stats.gold import annotator_quality, untouched_chance
    from annotation.stats.policy import Policy

    def rec(n, ranked, shown):
        order = [i for t in ranked for i in t]
        return RankingRecord(f"t{n}", "x", "nurse", order, shown, tiers=ranked)

    assert untouched_chance(rec(0, (("a",), ("b",), ("c",)), ("a", "b", "c"))) == 1 / 6
    assert untouched_chance(rec(0, (("a",), ("b",)), ("a", "b"))) == 1 / 2
    assert untouched_chance(rec(0, (("a",), ("b", "c"), ("d",)), ("a", "b", "c", "d"))) == 2 / 24
    assert untouched_chance(rec(0, (("a", "b", "c"),), ("a", "b", "c"))) == 0
    assert untouched_chance(rec(0, (("a", "b"),), ("a", "b"))) == 0
    # pairs: a careful annotator keeps the shown order about half the time; 6 of 10 is fine
    pairs = [rec(n, (("a",), ("b",)) if n < 6 else (("b",), ("a",)), ("a", "b")) for n in range(10)]
    decided = Policy().decide(annotator_quality(pairs)["x"])
    assert decided.status == "ok", decided  # the line: 1/2 + 1/2 x 1/2 = 75%
    always = [rec(n, (("a",), ("b",)), ("a", "b")) for n in range(10)]
    assert Policy().decide(annotator_quality(always)["x"]).status == "excluded"  # 1/1024

    # 4 of 5 pairs in the shown order: one careful person in five does that (6/32), so
    # warned, not excluded; 10 of 10 (1/1024) and 18 of 20 rule chance out at 1 in 1,000
    def first_shown(kept, of):
        return [
            rec(n, (("a",), ("b",)) if n < kept else (("b",), ("a",)), ("a", "b"))
            for n in range(of)
        ]

    for kept, of, expected in [
        (4, 5, "warned"),
        (7, 7, "warned"),
        (10, 10, "excluded"),
        (16, 20, "warned"),
        (18, 20, "excluded"),
        (15, 20, "warned"),
        (12, 20, "ok"),
    ]:
        decided = Policy().decide(annotator_quality(first_shown(kept, of))["x"])
        assert decided.status == expected, (kept, of, decided)
    # a careful person who says "equal" of a third of the pairs: their "equal" answers are
    # judgements, left out of the rule, so only the first shown of the others counts
    equal = (("a", "b"),)
    careful = [rec(n, equal, ("a", "b")) for n in range(10, 20)] + first_shown(6, 10)
    assert Policy().decide(annotator_quality(careful)["x"]).status == "ok"
    # every pair "equal": the careless pattern, untouched with no chance of it
    always_equal = [rec(n, equal, ("a", "b")) for n in range(8)]
    decided = Policy().decide(annotator_quality(always_equal)["x"])
    assert decided.status == "excluded"
    assert "8 of 8 rankings submitted in the shown order or all equal" in decided.reasons[0]


@pytest.mark.django_db(transaction=True)
def test_rankings_stored_before_tiers_keep_every_label():
    """Rankings stored before tiers (migration 0023) are strict rankings whose positions
    are their tier indexes: the labels after the migration are the ones computed before,
    mean position / (K - 1) over the historical rows, on SQLite and PostgreSQL alike."""
    from collections import defaultdict

    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    from annotation.rankings.label_sql import aggregated_labels

    executor = MigrationExecutor(connection)
    before = [("annotation", "0022_content_languages")]
    after = executor.loader.graph.leaf_nodes()
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    model = old.get_model
    study = model("annotation", "Study").objects.create(slug="s", name="S", platform="generic")
    occupation = model("annotation", "Occupation").objects.create(name="nurse", slug="nurse")
    prompt = model("annotation", "Prompt").objects.create(
        occupation=occupation, prompt_type="neutral", text="A nurse"
    )
    items = [
        model("annotation", "Item").objects.create(
            prompt=prompt, image=f"{i}.png", image_sha256=str(i), study=study
        )
        for i in range(4)
    ]
    user_model = model("auth", "User")
    orders = [[0, 1, 2, 3], [3, 1, 0, 2], [1, 0, 3, 2]]
    for n, order in enumerate(orders):
        task = model("annotation", "RankingTask").objects.create(
            study=study, occupation=occupation, overlap=3
        )
        user = user_model.objects.create(username=f"u{n}")
        profile = model("annotation", "AnnotatorProfile").objects.create(user=user, study=study)
        ids = [items[i].pk for i in order]
        ranking = model("annotation", "Ranking").objects.create(
            task=task, annotator=profile, order=ids, shown_order=ids
        )
        for position, item in enumerate(ids):
            model("annotation", "RankedItem").objects.create(
                ranking=ranking, item_id=item, position=position, shown_position=position
            )
    expected: dict[int, list[float]] = defaultdict(list)
    for row in model("annotation", "RankedItem").objects.all():
        expected[row.item_id].append(row.position / 3)
    expected = {item: sum(v) / len(v) for item, v in expected.items()}
    MigrationExecutor(connection).migrate(after)
    from annotation.models import Consent, ConsentText
    from annotation.rankings.selectors import label_rows

    text = ConsentText.objects.create(study_id=study.pk, version=1, text="t")
    for profile in model("annotation", "AnnotatorProfile").objects.all():
        Consent.objects.create(annotator_id=profile.pk, text=text)
    from annotation.models import Study as Current

    scope = [Current.objects.get(pk=study.pk)]
    assert item_labels(label_rows(studies=scope)) == pytest.approx(expected)
    if connection.vendor == "postgresql":
        assert aggregated_labels(False, [], studies=scope).labels == pytest.approx(expected)


def test_a_pairs_agreement_is_its_squared_majority_margin():
    from annotation.stats.overlap import task_agreement

    assert task_agreement([[["a"], ["b"]]] * 3) == pytest.approx(1.0)
    three_one = [[["a"], ["b"]]] * 3 + [[["b"], ["a"]]]
    assert task_agreement(three_one) == pytest.approx(((3 - 1) / 4) ** 2)
    # "equal" as a tie: rank sums 3.5 and 5.5 about 4.5, S = 2; the tie correction takes
    # m (2^3 - 2) = 18 off m^2 (n^3 - n) = 54: W = 12 x 2 / 36
    with_equal = [[["a"], ["b"]], [["a"], ["b"]], [["a", "b"]]]
    assert task_agreement(with_equal) == pytest.approx(2 / 3)
    assert task_agreement([[1, 2, 3], [1, 2, 3]]) == pytest.approx(1.0)  # orders as before
