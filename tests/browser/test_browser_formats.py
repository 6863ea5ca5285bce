"""Each question format's page (issue 40) at laptop and phone size: axe finds no critical or
serious violation, nothing is wider than the window, and the answer is given by keyboard
alone (Tab to a control, arrows and space to choose, Enter to submit) and stored as the
format's tiers. One page a format: the ranking page with ties, the choice page in its three
forms (top k, best-worst, a pair)."""

import pytest
from django.urls import reverse
from selenium.webdriver.common.keys import Keys

from annotation.models import Ranking, Study, default_study
from annotation.stats.tiers import of_ranking
from tests.browser.support import (
    NEEDS_CHROMIUM,
    axe_violations,
    laptop,
    phone,
    sideways,
    sign_in,
    wait_until,
)

pytestmark = [pytest.mark.browser, NEEDS_CHROMIUM]

FORMATS = {  # question: (k, task size)
    "rank_ties": (None, 3),
    "top_k": (2, 4),
    "best_worst": (None, 4),
    "pairwise": (None, 2),
}


def press(driver, *keys) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    chain = ActionChains(driver)
    for key in keys:
        chain.send_keys(key)
    chain.perform()


def focus(driver, selector: str) -> None:
    """Tab until ``selector`` has focus (a keyboard user's way there)."""
    for _ in range(40):
        press(driver, Keys.TAB)
        if driver.execute_script(f"return document.activeElement.matches({selector!r})"):
            return
    raise AssertionError(f"Tab never reached {selector}")


@pytest.mark.parametrize("size", ["laptop", "phone"])
@pytest.mark.parametrize("question", list(FORMATS))
def test_each_formats_page_passes_axe_fits_and_answers_by_keyboard(
    question, size, driver, live_server, transactional_db, media_root, make_tasks, portal_client
):
    k, cards = FORMATS[question]
    Study.objects.filter(pk=default_study().pk).update(question_format=question, question_k=k)
    make_tasks(1, k=cards, images=media_root)
    client = portal_client()
    (laptop if size == "laptop" else phone)(driver)
    sign_in(driver, live_server.url, client.profile.user)
    driver.get(live_server.url + reverse("portal:rank"))
    problems = [f"{v['id']} ({v['impact']}): {v['help']}" for v in axe_violations(driver)]
    assert not problems, problems
    assert not sideways(driver), sideways(driver)
    if question == "rank_ties":  # the third card as stereotypical as the second
        focus(driver, "li:nth-child(3) input[name=tied]")
        press(driver, Keys.SPACE)
        focus(driver, "#review-order")
        press(driver, Keys.ENTER)
        wait_until(driver, lambda d: d.find_element("id", "confirm-panel").is_displayed())
        # the review shows the tie: the third image shares the second's number, says why
        numbers = [e.text for e in driver.find_elements("css selector", "#confirm-list .position")]
        assert numbers == ["1", "2", "2"], numbers  # three cards, the last two tied
        tied = driver.find_element("css selector", "#confirm-list li:nth-child(3)").text
        assert "as stereotypical as the image before it" in tied, tied
        focus(driver, "#confirm-submit")
        press(driver, Keys.ENTER)
        # the cards were left where they were shown: the page asks once, and is told so
        wait_until(driver, lambda d: d.find_element("id", "unchanged-panel").is_displayed())
        focus(driver, "#unchanged-submit")
        press(driver, Keys.ENTER)
    else:
        if question == "top_k":  # place 1: the first image; place 2: the second
            for place in (1, 2):
                focus(driver, f"#pick-{place}")
                press(driver, *[Keys.ARROW_DOWN] * place)
        else:  # the first image the most stereotypical (or the one chosen of a pair)
            focus(driver, "input[type=radio]")
            press(driver, Keys.SPACE)
        if question == "best_worst":  # the third image the least
            focus(driver, "input[name=least]")
            press(driver, Keys.SPACE, Keys.ARROW_DOWN, Keys.ARROW_DOWN)
        focus(driver, "button[type=submit].primary")
        press(driver, Keys.ENTER)
    wait_until(driver, lambda d: Ranking.objects.exists(), timeout=15)
    ranking = Ranking.objects.get()
    tiers = of_ranking(ranking.order, ranking.tiers)  # a strict answer stores no tiers
    sizes = [len(t) for t in tiers]
    assert (
        sizes
        == {
            "rank_ties": [1, 2],
            "top_k": [1, 1, 2],
            "best_worst": [1, 2, 1],
            "pairwise": [1, 1],
        }[question]
    ), tiers
