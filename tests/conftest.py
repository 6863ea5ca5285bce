"""Shared fixtures. Real services: on CI (CI=true) a test that needs PostgreSQL
or Redis fails when it is missing; elsewhere it skips, saying why."""

import functools
import io
import os
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client
from django.test.client import ClientMixin
from rest_framework.test import APIClient

from annotation.accounts.policy import needs_second_factor
from annotation.models import (
    AnnotatorProfile,
    Item,
    Occupation,
    Prompt,
    PromptType,
    RankingTask,
    TaskItem,
)
from annotation.participants import services
from tests.broker import broker  # noqa: F401  (a fixture: a broker a test can take down)
from tests.second_factor_helpers import verify_session
from tests.staff import give_role

ON_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


@functools.cache
def _redis_reachable() -> bool:
    if not settings.REDIS_URL:
        return False
    import redis

    try:
        redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=1).ping()
    except redis.RedisError:
        return False
    return True


def _missing_services(item: pytest.Item) -> list[str]:
    missing = []
    if item.get_closest_marker("postgres") and not settings.DATABASES["default"]["ENGINE"].endswith(
        "postgresql"
    ):
        missing.append("PostgreSQL (set DATABASE_URL=postgres://...)")
    if item.get_closest_marker("redis") and not _redis_reachable():
        missing.append("Redis (set REDIS_URL=redis://... to a running server)")
    return missing


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``--dist loadgroup``), the tests that drive real Redis queues,
    Celery workers and beat share one xdist worker: their workers' node names, queues and
    heartbeats are fixed, so two at once would take each other's tasks. The other tests
    of one file share a worker too, so a module's fixtures (a browser, a trained head, a
    learning curve, an exported encoder) are made once, not once per worker."""
    for item in items:
        if item.get_closest_marker("redis"):
            item.add_marker(pytest.mark.xdist_group("services"))
        elif item.get_closest_marker("faults"):  # its own services: not in the line above's
            item.add_marker(pytest.mark.xdist_group("faults"))
        elif not item.get_closest_marker("xdist_group"):  # a test may name its own group
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


# The groups that take longest, longest first (measured with --durations=0, 2026-12-07):
# bin/test passes --no-loadscope-reorder, so xdist hands groups out in this order and then
# by their number of tests, as it would itself. Sorted by count alone, a group of one long
# test (the README's blocks) started last and left the other worker idle for minutes.
LONGEST_GROUPS = (
    "services",
    "tests/project/test_project_readme.py",
    "faults",
    "tests/ml/test_ml_quantized.py",
    "tests/training/test_training_group_promotion.py",
    "tests/browser/test_browser_staff_pages.py",
    "tests/annotation/test_annotation_careless.py",
    "tests/scoring/test_scoring_validation_quality.py",
    "tests/project/test_project_access_walk.py",
)


class LongestFirst:
    """The plugin that orders the run last of all (after pytest-django's own reordering)."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        longest_first(items)


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: one process keeps pytest-django's order
        config.pluginmanager.register(LongestFirst(), "stereorank-longest-first")


def longest_first(items: list[pytest.Item]) -> None:
    """Order ``items`` group by group: ``LONGEST_GROUPS`` first, then the groups with most
    tests; a group's tests keep their order (module fixtures are made once)."""

    def group(item: pytest.Item) -> str:
        marker = item.get_closest_marker("xdist_group")
        return marker.kwargs.get("name") or marker.args[0]

    counts: dict[str, int] = {}
    first: dict[str, int] = {}
    for i, item in enumerate(items):
        counts[group(item)] = counts.get(group(item), 0) + 1
        first.setdefault(group(item), i)
    rank = {name: i for i, name in enumerate(LONGEST_GROUPS)}

    def key(item: pytest.Item) -> tuple[int, int, int]:
        name = group(item)
        return rank.get(name, len(rank)), -counts[name], first[name]

    items.sort(key=key)


@pytest.fixture(scope="session")
def quant_models(tmp_path_factory) -> Path:
    """One folder of exported encoders for the whole run, shared by the xdist workers
    (exports are keyed by what they hold and land atomically), so the MiniLM ONNX int8
    copy that three modules use is exported once, not once per worker
    (``tests.model_exports.exported_once``)."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if "PYTEST_XDIST_WORKER" in os.environ else base) / "quant-models"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture(scope="session", autouse=True)
def _a_broker_and_cache_per_xdist_worker():
    """Under pytest-xdist, each pytest worker queues Celery tasks on a Redis database of
    its own (db 1 + its index), so a live Celery worker started by one test never takes a
    task another pytest worker's test queued against another test database; and its
    Django cache is a Redis database of its own (db 15 - its index), so one worker's
    ``cache.clear()`` never drops the locks and pages another worker's test just wrote."""
    index = os.environ.get("PYTEST_XDIST_WORKER", "")[2:]
    if not index.isdigit() or not settings.CELERY_BROKER_URL.startswith("redis"):
        yield
        return
    from urllib.parse import urlsplit, urlunsplit

    from django.test.utils import override_settings

    from web.celery import app

    def on_db(url: str, db: int) -> str:
        return urlunsplit(urlsplit(url)._replace(path=f"/{db}"))

    own = on_db(settings.CELERY_BROKER_URL, 1 + int(index))
    before = settings.CELERY_BROKER_URL, settings.CELERY_RESULT_BACKEND
    settings.CELERY_BROKER_URL = settings.CELERY_RESULT_BACKEND = own
    app.conf.broker_url = app.conf.result_backend = own
    caches = {name: dict(conf) for name, conf in settings.CACHES.items()}
    if caches["default"]["BACKEND"].endswith("RedisCache"):
        caches["default"]["LOCATION"] = on_db(caches["default"]["LOCATION"], 15 - int(index))
    # override_settings sends setting_changed, which rebuilds django.core.cache.caches
    with override_settings(CACHES=caches):
        from django.core.cache import cache

        cache.clear()  # this worker's own database: nothing of an earlier run (throttles)
        yield
    settings.CELERY_BROKER_URL, settings.CELERY_RESULT_BACKEND = before
    app.conf.broker_url, app.conf.result_backend = before


def pytest_runtest_setup(item: pytest.Item) -> None:
    missing = _missing_services(item)
    if missing:
        reason = "needs " + " and ".join(missing)
        if ON_CI:
            pytest.fail(f"CI requires the real services: {reason}", pytrace=False)
        pytest.skip(reason)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix, tmp_path_factory):
    """On SQLite, the test database is a file, as in the embedded mode, not shared memory.

    Threads then wait for the writer (timeout, IMMEDIATE transactions) as they do in
    production instead of failing at once with "database table is locked".
    """
    database = settings.DATABASES["default"]
    if database["ENGINE"].endswith("sqlite3"):
        folder = tmp_path_factory.mktemp("sqlite")
        database.setdefault("TEST", {})["NAME"] = str(folder / "test.sqlite3")
    elif database["ENGINE"].endswith("postgresql"):
        # One name per pytest run (its controlling process), so two runs at once on one
        # server never drop each other's test database.
        test = database.setdefault("TEST", {})
        run = os.getppid() if "PYTEST_XDIST_WORKER" in os.environ else os.getpid()
        test["NAME"] = f"{test.get('NAME') or 'test_' + database['NAME']}_{run}"


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    """Accounts are made in many tests; a slow hasher buys nothing there."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _force_login_includes_the_second_factor(monkeypatch):
    """``force_login`` stands for a finished log-in; for an account that needs a second
    factor (staff: ``annotation.accounts.policy``) that includes the code, so the session
    is also marked verified by a confirmed authenticator app (as ``django_otp.login``
    does). The second factor's own tests log in through the pages instead."""
    original = ClientMixin.force_login

    def force_login(self, user, backend=None):
        original(self, user, backend)
        if needs_second_factor(user):
            verify_session(self, user)

    monkeypatch.setattr(ClientMixin, "force_login", force_login)


def _png(colour: tuple[int, int, int]) -> bytes:
    """An 8x8 PNG of one colour: a real image file for pages that load images."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), colour).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture
def media_root(settings, tmp_path, monkeypatch) -> Path:
    """A temporary MEDIA_ROOT, also for the media view web.urls bound at import."""
    import web.urls

    root = tmp_path / "media"
    (root / "items").mkdir(parents=True)
    settings.MEDIA_ROOT = root
    for pattern in web.urls.urlpatterns:
        if "document_root" in getattr(pattern, "default_args", {}):
            monkeypatch.setitem(pattern.default_args, "document_root", str(root))
    return root


@pytest.fixture
def make_tasks(db):
    """make_tasks(n, k, overlap, occupation="nurse", study=None) -> list of tasks, each with
    k items of the occupation, in ``study`` (default: the default study).

    With ``images=media_root`` each item also gets a real PNG file there.
    """

    def make(
        n: int = 2,
        k: int = 3,
        overlap: int = 1,
        *,
        images: Path | None = None,
        occupation: str = "nurse",
        study=None,
    ) -> list[RankingTask]:
        occupation, _ = Occupation.objects.get_or_create(name=occupation, slug=occupation)
        original, _ = Prompt.objects.get_or_create(
            occupation=occupation,
            prompt_type=PromptType.NEUTRAL,
            origin=None,
            defaults={"text": f"A photo of a {occupation.name}"},
        )
        in_study = {} if study is None else {"study": study}
        tasks = []
        for _ in range(n):
            task = RankingTask.objects.create(occupation=occupation, overlap=overlap, **in_study)
            for i in range(k):
                prompt = Prompt.objects.create(
                    occupation=occupation,
                    prompt_type=PromptType.NEUTRAL,
                    origin=original,
                    text=f"task {task.pk} prompt {i}",
                )
                name = f"items/{task.pk}-{i}.png"
                if images is not None:
                    (images / name).write_bytes(_png((40 * i % 256, 97 * task.pk % 256, 200)))
                item = Item.objects.create(
                    prompt=prompt, image=name, image_sha256=f"{task.pk}-{i}", **in_study
                )
                TaskItem.objects.create(task=task, item=item)
            tasks.append(task)
        return tasks

    return make


def _make_profile(name: str, consent: bool, staff: bool, synthetic: bool) -> AnnotatorProfile:
    user = get_user_model().objects.create_user(name, password="pw-123456", is_staff=staff)
    if staff:  # a staff member owns the default study (tests/staff.py), never a superuser
        give_role(user)
    profile = services.get_profile(user)
    if synthetic:
        profile.is_synthetic = True
        profile.save()
    if consent:
        services.give_consent(profile)
    return profile


@pytest.fixture
def annotator(db):
    """annotator(name, consent=True, staff=False, synthetic=False) -> logged-in APIClient;
    a staff one owns the default study, with the demographics permission."""

    def make(name: str, consent: bool = True, staff: bool = False, synthetic: bool = False):
        profile = _make_profile(name, consent, staff, synthetic)
        client = APIClient()
        client.force_authenticate(profile.user)
        client.profile = profile
        return client

    return make


@pytest.fixture
def portal_client(db):
    """portal_client(name="ann", consent=True) -> a Django test Client logged in (session)."""

    def make(name: str = "ann", consent: bool = True) -> Client:
        profile = _make_profile(name, consent, staff=False, synthetic=False)
        client = Client()
        client.force_login(profile.user)
        client.profile = profile
        return client

    return make


@pytest.fixture
def store_ranking(db):
    """store_ranking(profile, task, order, shown=None, seconds=None) -> Ranking: reserves
    the task with that shown order (default: ``order``), then submits through the service."""
    from datetime import timedelta

    from django.utils import timezone

    from annotation.models import Assignment

    def store(profile, task, order, shown=None, seconds=None):
        Assignment.objects.update_or_create(
            task=task,
            annotator=profile,
            defaults={
                "shown_order": list(shown if shown is not None else order),
                "reserved_until": timezone.now() + timedelta(minutes=5),
            },
        )
        ranking, created = services.submit_ranking(profile, task.pk, list(order), seconds)
        assert created
        return ranking

    return store
