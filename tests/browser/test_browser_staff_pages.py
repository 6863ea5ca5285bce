"""Every staff page in headless Chromium, at laptop (1280x800) and phone (390x844, touch)
size, each filled with real rows: no page wider than its window (a wide table scrolls in
its own keyboard-focusable region), axe-core finds no critical or serious violation, and
every chart is an SVG shown at the size it was drawn (the phone's narrow drawing on a
phone). The pages: every dashboards page (the walk fails when a GET pattern of
``web/dashboards/urls.py`` was reached neither as a page nor as a resource of one, so a
new page cannot be forgotten), the prompt checker, the admin's index, its study pages and
a retraining schedule's change form. One browser pass per page and size, the data made
once; ``STEREORANK_SCREENSHOTS=folder`` saves each page whole."""

import base64
import io
import os
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.urls import Resolver404, resolve, reverse
from django.urls.converters import IntConverter
from django_celery_beat.models import PeriodicTask

from annotation.models import DemographicField, Study
from annotation.models.studies import default_study
from annotation.participants import services
from annotation.quality import store as quality_store
from tests.browser.support import (
    NEEDS_CHROMIUM,
    axe_violations,
    laptop,
    phone,
    sign_in,
    wait_replaced,
    wait_until,
)
from tests.browser.test_browser_a11y import _versions, go
from tests.dashboards.learning_curve_data import stored_curve
from tests.dashboards.test_dashboards_perspectives import flat, store
from tests.staff import make_staff
from tests.validation_helpers import make_validation_study
from training import services as training_services
from training.models import Checkpoint, DatasetSnapshot, EncoderGate, TrainingRun
from web.dashboards import urls as dashboard_urls

pytestmark = [pytest.mark.browser, NEEDS_CHROMIUM]

SIZES = {"laptop": laptop, "phone": phone}

# The dashboards' POST-only actions (each answers GET with 405, checked below); every other
# pattern of web/dashboards/urls.py must be reached by the walk, as a page or a resource.
POST_ONLY = {
    "learning-curve-request",
    "run-start",
    "run-cancel",
    "snapshot-create",
    "rollback",
    "import",
    "promote",
    "reinstate",
}

# What the walk reads of a page: its width against the window's (without a scroll bar),
# the elements that stick out (for the message), the cards whose content sticks out of
# them (a card is no wider than its column), its charts and the URLs it fetched.
PAGE_STATE = """
const inner = document.documentElement.clientWidth;
const wide = [];
for (const el of document.body.querySelectorAll('*')) {
  const r = el.getBoundingClientRect();
  if (r.width === 0 || r.right <= inner + 0.5) continue;
  let clipped = false;
  for (let p = el.parentElement; p && p !== document.body && !clipped; p = p.parentElement) {
    clipped = ['auto', 'scroll', 'hidden'].includes(getComputedStyle(p).overflowX);
  }
  if (!clipped) wide.push(el.tagName.toLowerCase() + (el.id ? '#' + el.id : '')
    + ' right=' + Math.round(r.right));
}
return {
  scroll: document.documentElement.scrollWidth, inner: inner, wide: wide.slice(0, 6),
  spilt: Array.from(document.querySelectorAll('.card'))
    .filter(c => c.scrollWidth > c.clientWidth + 1)
    .map(c => (c.getAttribute('aria-labelledby') || 'a card') + ' ' + c.scrollWidth
      + '/' + c.clientWidth),
  charts: Array.from(document.querySelectorAll('img.chart'), i => ({src: i.currentSrc,
    natural: i.naturalWidth, shown: i.clientWidth, alt: i.alt, complete: i.complete})),
  fetched: performance.getEntriesByType('resource').map(e => e.name),
};
"""


def _searched_run(snapshot: DatasetSnapshot) -> TrainingRun:
    """A finished run with the search record ``training.runs.search`` writes (four
    configurations, the last chosen), without training anything."""
    configs = [
        {"lr": lr, "epochs": epochs, "alpha": 0.01, "temperature": 0.5, "weight_decay": 0.01}
        for lr in (0.01, 0.03)
        for epochs in (1, 2)
    ]
    scores = [
        {"config": c, "mean": 0.4 + 0.05 * i, "ci": [0.3 + 0.05 * i, 0.5 + 0.05 * i]}
        for i, c in enumerate(configs)
    ]
    return TrainingRun.objects.create(
        snapshot=snapshot,
        encoder="minilm",
        hyperparameters={"recipe": "standard", **configs[3]},
        epochs=2,
        epoch=2,
        status="done",
        search={
            "configurations": 4,
            "space": {"folds": 3},
            "done": 24,
            "total": 24,
            "scores": scores,
            "chosen": 3,
            "prompts": 6,
            "examples": 12,
            "seconds": 1.5,
        },
    )


def _staff_site(tmp_path) -> dict:
    """Rows for every staff page: two versions evaluated on a snapshot (v1 active through
    the registry, with a schedule's long reason; v2 steered from v1 and refused by the
    configured quantized encoder, v1 gated), a training run and a searched one, a
    schedule and a decision, stored perspective reports, a learning curve, a
    second collection study, a validation study ranked by six synthetic annotators and
    its stored quality report; a superuser (staff, the admin and the scoring role)."""
    _versions(tmp_path)
    snapshot = DatasetSnapshot.objects.get()
    v1, v2 = Checkpoint.objects.order_by("version")
    EncoderGate.objects.create(
        checkpoint=v1,
        snapshot=snapshot,
        backend="onnx",
        quantization="int8",
        encoder_key="0" * 16,
        encoder_identity={"name": "minilm"},
        metrics={
            "rho_drift": 0.0012,
            "flips": 1,
            "flip_share": 0.0025,
            "flip_n": 400,
            "flip_upper": 0.0118,
            "n": 100,
        },
        passed=True,
    )
    steering = {"kind": "steer", "field": "age_band", "value": "65-74"}
    Checkpoint.objects.filter(version=2).update(parent=v1, hyperparameters={"steering": steering})
    Checkpoint.objects.filter(version=1).update(status="candidate")
    training_services.promote(
        v1,
        actor="schedule Retrain on new rankings",
        reason="rho 0.715 vs 0.341 (version 1), diff +0.374, 95% CI [+0.301, +0.447] above "
        "zero; age_band=65-74 alignment 0.698 vs 0.769 (version 1), diff -0.072, 95% CI "
        "[-0.088, -0.055] falls by more than 0.02",
    )
    DemographicField.objects.get_or_create(key="age_band", defaults={"label": "Age band"})
    store(v1, snapshot, {"18-24": flat(0.6), "65-74": flat(0.8), "75+": None})
    store(v2, snapshot, {"18-24": flat(0.7), "65-74": flat(0.7), "75+": None})
    stored_curve(snapshot)
    run = _searched_run(snapshot)
    Study.objects.create(slug="wave-2", name="Second wave", platform="generic")
    validation = make_validation_study(tmp_path, occupations=4)
    call_command(
        "simulate_annotators",
        *("--study", "val", "--count", "6", "--effect", "1.0"),
        stdout=io.StringIO(),
    )
    # The validation study's rankings overlap (agreement per occupation, its chart).
    quality_store.refresh(True, settings.STEREORANK["QUALITY_N_BOOT"], study=validation)
    staff = get_user_model().objects.create_superuser("boss", password="pw-123456")
    services.get_profile(staff)
    return {"staff": staff, "run": run, "schedule": PeriodicTask.objects.get()}


def _staff_kinds() -> list[tuple[str, object, list[str]]]:
    """The crawl's four kinds of staff (tests/dashboards/test_dashboards_crawl.py follows
    their links), each with the pages their role changes: what they may do, what they are
    told they may not."""
    studies = (default_study(), Study.objects.get(slug="val"))
    progress, registry = reverse("dashboards:progress"), reverse("dashboards:registry")
    runs = reverse("dashboards:runs") + "?study=default"
    quality = reverse("dashboards:quality") + "?study=val&synthetic=1"
    nobody = get_user_model().objects.create_user("nobody-b", password="pw-123456", is_staff=True)
    return [
        ("owner", make_staff("owner-b", *studies, role="owner"), [progress, registry]),
        ("researcher", make_staff("researcher-b", *studies, role="researcher"), [runs, registry]),
        ("viewer", make_staff("viewer-b", *studies, role="viewer"), [progress, runs, quality]),
        ("no role", nobody, ["/dashboards/", registry]),
    ]


def _take_a_snapshot(driver) -> None:
    """The runs page as it reads after an action: the snapshot form sent, a message shown."""
    html = driver.find_element("tag name", "html")
    driver.find_element("css selector", "form[action*='snapshots/new'] [type=submit]").click()
    wait_replaced(driver, html)
    assert driver.find_elements("css selector", ".messages .message")


def _pages(site: dict) -> list[tuple]:
    """(name, path, a selector found only on the page filled, what to do there first)."""
    default = default_study()
    schedule = site["schedule"].pk
    return [
        ("progress", reverse("dashboards:progress"), "#studies tr[data-study='val']", None),
        (
            "runs",
            reverse("dashboards:runs") + "?study=default",  # a collection study: a snapshot
            "#runs tr[data-finished='0']",
            _take_a_snapshot,
        ),
        ("run", reverse("dashboards:run", args=[site["run"].pk]), "#configs tr.chosen", None),
        ("registry", reverse("dashboards:registry"), "#versions tr[data-version='1'] .gate", None),
        ("compare", reverse("dashboards:compare") + "?a=1&b=2", "#occupations-chart", None),
        (
            "perspectives",
            reverse("dashboards:perspectives") + "?version=2&against=1",
            "#paired tbody tr",
            None,
        ),
        ("schedules", reverse("dashboards:schedules"), "#schedules [data-field=cadence]", None),
        (
            "quality",
            reverse("dashboards:quality") + "?study=val&synthetic=1",
            "#annotator-quality td",
            None,
        ),
        ("validation", reverse("dashboards:validation"), "#validation-studies tbody a", None),
        (
            "validation report",
            reverse("dashboards:validation-study", args=["val"]),
            "#per-occupation tbody tr",
            None,
        ),
        ("checker", reverse("scoring:check"), "#check-form", None),
        ("admin", reverse("admin:index"), "#content-main .app-annotation", None),
        ("admin studies", reverse("admin:annotation_study_changelist"), "#result_list td", None),
        (
            "admin study",
            reverse("admin:annotation_study_change", args=[default.pk]),
            "#study_form #id_slug",
            None,
        ),
        (
            "admin schedule",
            reverse("admin:django_celery_beat_periodictask_change", args=[schedule]),
            "#periodictask_form #id_min_new_rankings",
            None,
        ),
    ]


def _dashboard_pattern(url: str, origin: str) -> str | None:
    """The dashboards' URL name of ``url`` (None for another origin, app or a file)."""
    parts = urlsplit(url)
    if f"{parts.scheme}://{parts.netloc}" != origin:
        return None
    try:
        match = resolve(parts.path)
    except Resolver404:
        return None
    return match.url_name if match.namespace == "dashboards" else None


def _problems(driver, where: str, size: str) -> tuple[list[str], list[str]]:
    """What is wrong with the page shown, and the URLs it fetched."""
    state = driver.execute_script(PAGE_STATE)
    found = []
    if state["scroll"] > state["inner"]:
        wide = "; ".join(state["wide"])
        found.append(f"{where}: {state['scroll']} px wide in a {state['inner']} px window: {wide}")
    if state["spilt"]:
        found.append(f"{where}: content sticks out of its card: {state['spilt']}")
    for chart in state["charts"]:
        if not (
            chart["complete"]
            and chart["natural"] > 0
            and ".svg" in chart["src"]
            and chart["alt"]
            and ("size=narrow" in chart["src"]) == (size == "phone")
            and abs(chart["natural"] - chart["shown"]) <= 1
        ):
            found.append(f"{where}: a chart not shown as drawn: {chart}")
    found += [
        f"{where}: {v['id']} ({v['impact']}) {v['help']} at "
        + ", ".join(" ".join(n["target"]) for n in v["nodes"][:5])
        for v in axe_violations(driver)
    ]
    return found, state["fetched"]


def _screenshot(driver, path: Path) -> None:
    """The whole page, not only the window, as a PNG."""
    height = driver.execute_script("return document.documentElement.scrollHeight")
    width = driver.execute_script("return document.documentElement.clientWidth")
    clip = {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot", {"captureBeyondViewport": True, "clip": clip}
    )
    path.write_bytes(base64.b64decode(shot["data"]))


def _fetched_export(driver) -> bool:
    """The registry's model-card download of v1 answers (the .pth and zip ones need a
    checkpoint on disk, which these rows do not have)."""
    href = driver.find_element("css selector", "tr[data-version='1'] a[href$='format=card']")
    status = driver.execute_script(
        "return fetch(arguments[0]).then(r => r.status + ' ' + r.headers.get('content-type'))",
        href.get_attribute("href"),
    )
    return status.startswith("200 text/markdown")


def test_every_staff_page_fits_its_window_and_passes_axe(
    driver, live_server, transactional_db, media_root, tmp_path, settings
):
    scoring = {
        **settings.STEREORANK["SCORING"],
        "ENCODER_BACKEND": "onnx",
        "ENCODER_QUANTIZATION": "int8",
        "UNGATED": "refuse",
    }
    settings.STEREORANK = {**settings.STEREORANK, "QUALITY_N_BOOT": 100, "SCORING": scoring}
    site = _staff_site(tmp_path)
    url = live_server.url
    reached: set[str | None] = set()
    problems: list[str] = []
    shots = os.environ.get("STEREORANK_SCREENSHOTS")
    sign_in(driver, url, site["staff"])
    for size, resize in SIZES.items():
        resize(driver)
        for name, path, filled, action in _pages(site):
            go(driver, url + path)
            if action:
                action(driver)
            where = f"{name} ({size})"
            if not driver.find_elements("css selector", filled):
                problems.append(f"{where}: not filled ({filled} not found)")
            if name == "runs" and "runs-progress" not in reached:  # its first poll, at 2 s
                wait_until(
                    driver,
                    lambda d: d.execute_script(
                        "return performance.getEntriesByType('resource')"
                        ".some(e => e.name.includes('progress.json'))"
                    ),
                )
            if name == "registry" and _fetched_export(driver):
                reached.add("export")
            found, fetched = _problems(driver, where, size)
            problems += found
            reached |= {_dashboard_pattern(u, url) for u in [driver.current_url, *fetched]}
            if shots:
                _screenshot(driver, Path(shots) / f"{name.replace(' ', '-')}-{size}.png")
    for kind, user, paths in _staff_kinds():  # issue 37: the crawl's four kinds of staff
        sign_in(driver, url, user)
        for size, resize in SIZES.items():
            resize(driver)
            for path in paths:
                go(driver, url + path)
                problems += _problems(driver, f"{path} as {kind} ({size})", size)[0]
    assert not problems, "\n".join(problems)

    patterns = {p.name: p for p in dashboard_urls.urlpatterns}
    missed = set(patterns) - POST_ONLY - reached
    assert not missed, f"dashboards pages no walk reached (add them to _pages): {sorted(missed)}"
    client = Client()
    client.force_login(site["staff"])
    for name in POST_ONLY:  # each really is an action, not a page the walk skips
        converters = patterns[name].pattern.converters
        args = {k: 1 if isinstance(c, IntConverter) else "val" for k, c in converters.items()}
        assert client.get(reverse(f"dashboards:{name}", kwargs=args)).status_code == 405, name
