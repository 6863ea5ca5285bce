"""Headless Chromium through the portal: sign up, consent, demographics, rank
one task with the mouse and one with the keyboard, see progress."""

import shutil

import pytest

from annotation.models import ConsentText, DemographicField, Ranking

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")


@pytest.fixture
def browser():
    if not (CHROMIUM and DRIVER):
        pytest.skip("needs Debian's chromium and chromium-driver (bin/test installs them as root)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--window-size=1200,1400"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.implicitly_wait(3)
    yield driver
    driver.quit()


def wait_for_path(driver, path):
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 10).until(lambda d: d.current_url.split("//", 1)[1].partition("/")[2]
                                    == path.lstrip("/"))


def order_on_page(driver):
    from selenium.webdriver.common.by import By

    return [int(c.get_attribute("data-id")) for c in driver.find_elements(By.CSS_SELECTOR, ".card")]


def submit_page(driver):
    from selenium.webdriver.common.by import By

    driver.find_element(By.ID, "review").click()
    driver.find_element(By.ID, "confirm-submit").click()


def test_sign_up_consent_demographics_and_rank(browser, live_server, make_tasks):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    make_tasks(2, k=3)
    ConsentText.objects.create(version=1, text="Please agree to take part.")
    DemographicField.objects.create(key="age_band", label="Age", choices=["25-34"])
    b, url = browser, live_server.url
    b.get(url + "/signup/")
    b.find_element(By.NAME, "username").send_keys("chromie")
    b.find_element(By.NAME, "password1").send_keys("a-Long-pass-42")
    b.find_element(By.NAME, "password2").send_keys("a-Long-pass-42")
    b.find_element(By.CSS_SELECTOR, "main form button").click()
    wait_for_path(b, "/consent/")
    assert "Please agree" in b.page_source
    b.find_element(By.CSS_SELECTOR, "button[value=agree]").click()
    wait_for_path(b, "/demographics/")
    b.find_element(By.NAME, "age_band").send_keys("25-34")
    b.find_element(By.CSS_SELECTOR, "main form button").click()
    wait_for_path(b, "/")
    assert "0</strong> of 20" in b.page_source

    # Task 1 with the mouse: drag the first card below the last.
    b.get(url + "/rank/")
    before = order_on_page(b)
    cards = b.find_elements(By.CSS_SELECTOR, ".card")
    ActionChains(b).click_and_hold(cards[0]).move_to_element_with_offset(cards[2], 0, 30) \
        .release().perform()
    dragged = order_on_page(b)
    assert dragged == before[1:] + before[:1]
    submit_page(b)
    b.find_element(By.ID, "review")  # the next task's page
    assert Ranking.objects.get().order == dragged

    # Task 2 with the keyboard: focus the last card, press 1, then ArrowDown.
    before = order_on_page(b)
    last = b.find_elements(By.CSS_SELECTOR, ".card")[-1]
    last.click()
    last.send_keys("1")
    b.switch_to.active_element.send_keys(Keys.ARROW_DOWN)
    keyed = order_on_page(b)
    assert keyed == [before[0], before[2], before[1]]
    assert [p.text for p in b.find_elements(By.CSS_SELECTOR, ".pos")] == ["1", "2", "3"]
    submit_page(b)
    assert "Thank you" in b.find_element(By.TAG_NAME, "h1").text or b.find_element(By.ID, "review")
    assert Ranking.objects.order_by("id").last().order == keyed
    b.get(url + "/")
    assert "2</strong> of 20" in b.page_source
