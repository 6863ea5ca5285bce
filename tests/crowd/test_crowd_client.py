"""The Prolific client's transport against the fake server: a 429's ``Retry-After`` is
what it waits, 5xx and time-outs are retried with back-off, a refusal stops at once, and
the pay call is sent once whatever happens; the token goes to Prolific's host only."""

from decimal import Decimal

import pytest

from annotation.crowd.platform import AnswerLost, PlatformError
from annotation.crowd.prolific import Prolific
from annotation.crowd.services import estimated_minutes
from tests.crowd.crowd_study import TOKEN, configure, make_study, participant, rank
from tests.crowd_server import FakeProlific


@pytest.fixture
def server():
    fake = FakeProlific(TOKEN, client_timeout=0.3)
    yield fake
    fake.close()


def client(server, waits):
    return Prolific(TOKEN, server.url, timeout=0.3, backoff_s=0.05, sleep=waits.append)


def test_retry_after_is_honoured_and_back_off_doubles(server):
    waits = []
    server.fail("GET", "/filters/", "429")
    server.fail("GET", "/filters/", "500", times=2)
    assert client(server, waits).filters()
    assert waits == [0.01, 0.1, 0.2]  # Retry-After, then 0.05 * 2**1, 0.05 * 2**2


def test_a_time_out_is_retried_and_a_refusal_is_not(server):
    waits = []
    server.fail("GET", "/filters/", "timeout")
    assert client(server, waits).filters() and len(waits) == 1
    with pytest.raises(PlatformError, match=r"refused GET /submissions/nope/ \(404\)"):
        client(server, waits).submission("nope")
    assert server.count("GET", "/submissions/nope/") == 1


def test_a_wrong_token_is_refused_and_never_echoed(server):
    with pytest.raises(PlatformError) as refused:
        Prolific("not-the-token", server.url, timeout=0.3).filters()
    assert "401" in refused.value.message and "not-the-token" not in refused.value.message


@pytest.mark.parametrize("fault", ["500", "timeout", "lose_answer"])
def test_the_pay_call_is_sent_once_whatever_happens(server, fault):
    waits = []
    prolific = client(server, waits)
    server.studies["s1"] = {"id": "s1"}
    server.add_submission("s1", "sub1")
    payment = prolific.set_up_bonuses("s1", [("sub1", Decimal("0.30"))])
    assert payment.total_cents == 30
    server.fail("POST", "/pay/", fault)
    with pytest.raises(AnswerLost):
        prolific.pay(payment.id)
    assert server.count("POST", "/pay/") == 1 and waits == []
    paid = server.submissions["sub1"]["bonus_payments"]
    assert paid == ([30] if fault == "lose_answer" else [])


def test_paging_stays_on_prolifics_host(server):
    server.studies.update({f"s{i}": {"id": f"s{i}", "internal_name": f"n{i}"} for i in range(5)})
    assert client(server, []).find_study("n4").id == "s4"  # three pages of two
    server.url = "http://evil.example"  # a next link to another host
    with pytest.raises(PlatformError, match="paged off its host"):
        client_ = Prolific(TOKEN, f"http://127.0.0.1:{server.server.server_address[1]}")
        client_.find_study("missing")


def test_the_estimated_time_is_the_median_answer_times_the_quota(
    settings, db, store_ranking, make_tasks
):
    fake = configure(settings)
    try:
        study = make_study()
        assert estimated_minutes(study) is None
        study.tasks_per_participant = 20
        study.save()
        part = participant(study, "ann")
        for task, seconds in zip(make_tasks(n=3, k=3, study=study), (20, 30, 400), strict=True):
            ranking = rank(store_ranking, part, task)
            ranking.seconds_spent = seconds
            ranking.save()
        assert estimated_minutes(study) == 10 + 4  # median 30 s x 20 answers, plus overhead
    finally:
        fake.close()


def test_plain_http_to_another_host_is_refused_and_errors_never_echo_the_token(server):
    with pytest.raises(PlatformError, match="must be an https:// address"):
        Prolific(TOKEN, "http://api.prolific.example")
    assert Prolific(TOKEN, "https://api.prolific.com").root == "https://api.prolific.com/api/v1"
    echoing = Prolific(TOKEN, server.url, timeout=0.3)
    server.token = "other"  # now our token is refused, and the answer echoes what it got
    original = server._answer

    def echo(h, status, body, headers=None):
        if status == 401:
            body = {"error": {"detail": f"bad {h.headers.get('Authorization')}"}}
        return original(h, status, body, headers)

    server._answer = echo
    with pytest.raises(PlatformError) as refused:
        echoing.filters()
    assert TOKEN not in refused.value.message and "[token]" in refused.value.message
