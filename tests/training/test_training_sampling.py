"""The active sampler on the training side (training/registry/sampling.py): priorities written for
an ``active`` study, checked against an independent numpy computation, and end to end
through a real Celery worker."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

# A real worker: the fixtures of the worker tests, imported so that pytest finds them here.
from test_training_worker import wait_for, worker, worker_process, worker_storage  # noqa: F401
from training_study import ENCODER

from annotation.assignment.next_task import next_task
from annotation.models import RankingTask, Study
from annotation.studies.lifecycle import default_study, set_sampler
from tests.staff import make_staff
from training.ml.checkpoints import Checkpoint as MLCheckpoint
from training.registry.sampling import update_priorities
from training.registry.services import register
from training.storage import encoders

T = 0.5


def _version(seed: int = 0) -> np.ndarray:
    """Register a version whose head is random (float32 as stored); returns its weights."""
    identity = encoders.encoder(ENCODER).identity
    w = np.random.default_rng(seed).normal(size=identity.dim).astype(np.float32)
    head = {"fc.weight": torch.from_numpy(w[None].copy()), "fc.bias": torch.zeros(1)}
    files = MLCheckpoint(head, identity, {"temperature": T}, "test", {}, 0.12)
    register(files, source="test")
    return w.astype(np.float64)


def _softmax(u: np.ndarray) -> np.ndarray:
    e = np.exp(u - u.max())
    return e / e.sum()


def _score(x: np.ndarray, draw: list[int], w: np.ndarray) -> np.ndarray:
    """d log P(draw) / dw for a Plackett-Luce draw (best first) at u = X w / T."""
    u = x @ w / T
    g = np.zeros_like(w)
    for j in range(len(draw) - 1):
        rest = draw[j:]
        g += (x[draw[j]] - _softmax(u[rest]) @ x[rest]) / T
    return g


def _probability(x: np.ndarray, draw: tuple[int, ...], w: np.ndarray) -> float:
    u = x @ w / T
    return float(np.prod([_softmax(u[list(draw[j:])])[0] for j in range(len(draw))]))


def _fisher(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """E[g g^T] over all K! draws: the definition, not the module's subset recursion."""
    out = np.zeros((len(w), len(w)))
    for draw in itertools.permutations(range(len(x))):
        g = _score(x, list(draw), w)
        out += _probability(x, draw, w) * np.outer(g, g)
    return out


def _observed(x: np.ndarray, draw: list[int], w: np.ndarray, h: float = 1e-4) -> np.ndarray:
    """-d^2 log P / dw^2 by central differences of the score."""
    cols = [
        (_score(x, draw, w + h * e) - _score(x, draw, w - h * e)) / (2 * h) for e in np.eye(len(w))
    ]
    hessian = np.stack(cols, axis=1)
    return -(hessian + hessian.T) / 2


def _log_det(m: np.ndarray) -> float:
    sign, value = np.linalg.slogdet(m)
    assert sign > 0
    return value


def test_priorities_follow_an_independent_numpy_fisher_on_a_hand_sized_case(
    make_tasks, annotator, store_ranking, settings
):
    """Five tasks of 3 items, one ranked: the precision is I + the ranking's observed
    information (finite differences), each open task's gain log det(P + F_t) - log det(P)
    with F_t summed over its 6 orders, two greedy picks (P += F of each pick), then the
    rest by gain: the order the service writes."""
    settings.STEREORANK = {
        **settings.STEREORANK,
        "SAMPLER": {"EVERY": 0, "BATCH": 2, "EXPLORATION": 0.0, "PRIOR": 1.0},
    }
    ranked, *open_tasks = make_tasks(5, k=3)
    order = list(ranked.task_items.values_list("item_id", flat=True))
    store_ranking(annotator("x").profile, ranked, order)
    study = set_sampler(default_study(), Study.Sampler.ACTIVE)
    w = _version()

    result = update_priorities(study.pk)

    assert (result.version, result.rankings, result.scored, result.explored) == (1, 1, 4, 0)
    encoder = encoders.encoder(ENCODER)

    def embeddings(task) -> tuple[list[int], np.ndarray]:
        ids = list(task.task_items.order_by("id").values_list("item_id", flat=True))
        texts = [RankingTask.objects.get(pk=task.pk).items.get(pk=i).prompt.text for i in ids]
        return ids, encoders.embedding_cache().embed(encoder, texts).astype(np.float64)

    ids, x = embeddings(ranked)
    draw = [ids.index(i) for i in reversed(order)]  # stored: most stereotypical first
    precision = np.eye(len(w)) + _observed(x, draw, w)
    fishers = {t.pk: _fisher(embeddings(t)[1], w) for t in open_tasks}
    picked = []
    for _ in range(2):
        base = _log_det(precision)
        gains = {
            pk: _log_det(precision + f) - base for pk, f in fishers.items() if pk not in picked
        }
        best = max(gains, key=gains.get)
        picked.append(best)
        precision = precision + fishers[best]
    base = _log_det(precision)
    rest = {pk: _log_det(precision + f) - base for pk, f in fishers.items() if pk not in picked}
    expected = picked + sorted(rest, key=rest.get, reverse=True)

    written = dict(RankingTask.objects.values_list("pk", "priority"))
    assert sorted(written, key=written.get, reverse=True)[:4] == expected
    assert [written[pk] for pk in expected] == [4.0, 3.0, 2.0, 1.0]
    assert written[ranked.pk] == 0.0  # closed: not scored
    study.refresh_from_db()
    assert study.priorities_basis.startswith("v1's head, 1 rankings: 4 open tasks scored")
    # Switched back to uniform: the priorities go to 0, the order is uniform's again.
    set_sampler(study, Study.Sampler.UNIFORM)
    assert update_priorities(study.pk).skipped == "uniform: no priorities"
    assert set(RankingTask.objects.values_list("priority", flat=True)) == {0.0}


def test_without_a_version_the_study_keeps_the_uniform_order(make_tasks, annotator):
    make_tasks(3, k=3)
    study = set_sampler(default_study(), Study.Sampler.ACTIVE)
    assert update_priorities(study.pk).skipped.startswith("no version yet")
    assert set(RankingTask.objects.values_list("priority", flat=True)) == {0.0}
    tasks = list(RankingTask.objects.order_by("id"))
    assert next_task(annotator("a").profile).task_id == tasks[0].pk  # uniform's tie: oldest


def test_staff_switch_the_sampler_through_the_api(client, django_user_model, db):
    client.force_login(make_staff("boss"))
    url = "/api/staff/studies/default/sampler/"
    assert client.get(url).json()["sampler"] == "uniform"
    response = client.put(url, {"sampler": "active"}, content_type="application/json")
    assert response.status_code == 200 and response.json()["sampler"] == "active"
    assert default_study().sampler == "active"
    bad = client.put(url, {"sampler": "greedy"}, content_type="application/json")
    assert bad.status_code == 400 and "greedy" in str(bad.json())
    assert client.get("/api/staff/studies/nope/sampler/").status_code == 404
    client.force_login(django_user_model.objects.create_user("ann", password="pw-123456"))
    assert (
        client.put(url, {"sampler": "uniform"}, content_type="application/json").status_code == 403
    )


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.slow
def test_a_study_switched_to_active_follows_the_priorities_a_worker_writes(
    worker,  # noqa: F811 - the fixture
    make_tasks,
    annotator,
    settings,
):
    """The switch queues the update after commit; the worker (default queue) writes the
    priorities; new annotators are handed the open tasks in that order; and with
    ``SAMPLER["EVERY"] = 1`` a submitted ranking queues the next update."""
    settings.STEREORANK = {
        **settings.STEREORANK,
        "SAMPLER": {**settings.STEREORANK["SAMPLER"], "EVERY": 1},
    }
    tasks = make_tasks(6, k=3)
    _version()
    study = set_sampler(default_study(), Study.Sampler.ACTIVE)

    def written(rankings: int):
        study.refresh_from_db()
        return study.priorities_basis.startswith(f"v1's head, {rankings} rankings") and study

    wait_for(lambda: written(0), what="the priorities after the switch", worker=worker)
    priority = dict(RankingTask.objects.values_list("pk", "priority"))
    assert sorted(priority.values()) == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    by_priority = sorted(priority, key=priority.get, reverse=True)
    taken = [next_task(annotator(f"a{n}").profile) for n in range(3)]
    assert [a.task_id for a in taken] == by_priority[:3]

    from annotation.participants import services

    first = taken[0]
    services.submit_ranking(first.annotator, first.task_id, first.shown_order)
    wait_for(lambda: written(1), what="the priorities after a ranking", worker=worker)
    assert {t.pk for t in tasks} >= set(priority)
