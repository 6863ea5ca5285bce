"""Who sees what, walked from the URL conf (issue 30): every staff URL pattern (the
dashboards, the staff and training APIs, the exports, the admin) is filled with an object
of study B and requested as a researcher of study A: 404 (an admin page of a model that
is not theirs at all may answer as it does for an id that does not exist), never a 500,
and no B data in the body. The same pattern filled with A's object answers its
researcher (the walk is not vacuous). A staff pattern with no probe here fails the walk.

Each GET is sent once more filled with A's rows (each pattern once per side, in one
process): no page or answer A's researcher reads of A carries anyone's demographic answer
without the demographics permission; with it, the export and the annotator's admin page
do, and each read is in the access log.

One module, one xdist group (tests/conftest.py groups by file); A and B are built once
(``tests/access_world.py``) inside a transaction rolled back at the end.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.contrib import admin
from django.contrib.contenttypes.models import ContentType
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from annotation.access.admin import StudyScopedAdmin
from annotation.access.models import AccessLogEntry
from tests.access_world import FIELD, Side, World, build
from training.admin import LineageScopedAdmin

STAFF_PREFIXES = ("dashboards/", "api/staff/", "api/training/", "api/export/", "admin/")
MISSING = "999999"


def _none(side) -> dict:
    return {}


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
        try:
            yield build()
        finally:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


def _client(user) -> Client:
    client = Client(raise_request_exception=False)  # a 500 is a failure to list, not a crash
    client.force_login(user)  # verified, as after the second factor (tests/conftest.py)
    return client


# --- the probes: one or more per named staff pattern --------------------------------------

Fill = Callable[[Side], dict]


@dataclass(frozen=True)
class Probe:
    method: str = "get"
    kwargs: Fill | None = None  # the URL's arguments, from one side's rows
    query: Fill | None = None
    data: Fill | None = None
    expect: str = "404"  # with B's rows: "404", or "clean" (no B data, no 500)
    sane: bool = True  # with A's rows (GETs only): A's researcher is answered


def get(kwargs=None, query=None, expect="404", sane=True) -> Probe:
    return Probe("get", kwargs, query, None, expect, sane)


def act(method="post", kwargs=None, query=None, data=None, expect="404") -> Probe:
    return Probe(method, kwargs, query, data, expect, False)


LIST = get(expect="clean")
STUDY = get(query=lambda s: {"study": s.study.slug})
RUN = {"run_id": lambda s: s.run.pk}


def kw(**fills) -> Fill:
    return lambda s: {name: fill(s) for name, fill in fills.items()}


PROBES: dict[str, list[Probe]] = {
    "dashboards:progress": [LIST, STUDY],
    "dashboards:learning-curve-chart": [get(kw(snapshot_id=lambda s: s.snapshot.pk), sane=False)],
    "dashboards:learning-curve-request": [act(kwargs=kw(snapshot_id=lambda s: s.snapshot.pk))],
    "dashboards:runs": [LIST, STUDY],
    "dashboards:runs-progress": [get(query=lambda s: {"ids": s.run.pk}, expect="clean")],
    "dashboards:run-start": [act(data=lambda s: {"snapshot": s.snapshot.pk}, expect="clean")],
    "dashboards:run": [get(kw(**RUN))],
    "dashboards:run-search-chart": [get(kw(**RUN))],
    "dashboards:run-cancel": [act(kwargs=kw(**RUN))],
    "dashboards:snapshot-create": [act(query=lambda s: {"study": s.study.slug})],
    "dashboards:registry": [LIST, get(query=lambda s: {"snapshot": s.snapshot.pk})],
    "dashboards:registry-chart": [get(query=lambda s: {"snapshot": s.snapshot.pk})],
    "dashboards:rollback": [act(expect="clean")],
    "dashboards:import": [act(expect="clean")],
    "dashboards:promote": [act(kwargs=kw(version=lambda s: s.checkpoint.version))],
    "dashboards:export": [
        get(kw(version=lambda s: s.checkpoint.version), lambda s: {"format": "card"}, sane=False)
    ],
    "dashboards:compare": [
        LIST,
        get(query=lambda s: {"a": s.checkpoint.version, "b": 202}, expect="clean", sane=False),
    ],
    "dashboards:compare-chart": [
        get(query=lambda s: {"a": 101, "b": 202, "snapshot": s.snapshot.pk}, expect="clean")
    ],
    "dashboards:perspectives": [
        LIST,
        get(query=lambda s: {"version": s.checkpoint.version}, expect="clean", sane=False),
    ],
    "dashboards:perspectives-groups": [
        get(query=lambda s: {"version": s.checkpoint.version, "field": FIELD}, expect="clean")
    ],
    "dashboards:perspectives-versions": [
        get(query=lambda s: {"field": FIELD, "snapshot": s.snapshot.pk}, expect="clean")
    ],
    "dashboards:schedules": [LIST],
    "dashboards:quality": [LIST, STUDY],
    "dashboards:quality-chart": [get(query=lambda s: {"study": s.study.slug}, sane=False)],
    "dashboards:position-chart": [
        get(kw(k=lambda s: 3), lambda s: {"study": s.study.slug}, sane=False)
    ],
    "dashboards:reinstate": [act(kwargs=kw(profile_id=lambda s: s.profile.pk))],
    "dashboards:validation": [LIST],
    "dashboards:validation-study": [get(kw(slug=lambda s: s.validation.slug))],
    "dashboards:validation-chart": [get(kw(slug=lambda s: s.validation.slug))],
    "training-snapshots": [LIST, act(data=lambda s: {"studies": [s.study.slug]})],
    "training-runs": [LIST, act(data=lambda s: {"snapshot": s.snapshot.pk}, expect="clean")],
    "training-run": [get(kw(**RUN))],
    "training-run-cancel": [act(kwargs=kw(**RUN))],
    "training-checkpoints": [LIST],
    "training-promote": [act(kwargs=kw(version=lambda s: s.checkpoint.version))],
    "training-perspectives": [get(kw(version=lambda s: s.checkpoint.version), sane=False)],
    "training-card": [get(kw(version=lambda s: s.checkpoint.version), sane=False)],
    "training-rollback": [act(expect="clean")],
    "training-compare": [get(query=lambda s: {"a": 101, "b": s.checkpoint.version}, sane=False)],
    "api-export-rankings": [get(query=lambda s: {"study": s.study.slug})],
    "api-export-pairs": [get(query=lambda s: {"study": s.study.slug})],
    "api-staff-quality": [get(query=lambda s: {"study": s.study.slug})],
    "api-staff-reinstate": [
        act(kwargs=kw(name=lambda s: s.pseudonym), data=lambda s: {"reason": "x"})
    ],
    "api-staff-studies": [LIST],
    "api-staff-study-transition": [
        act(kwargs=kw(slug=lambda s: s.study.slug), data=lambda s: {"status": "closed"})
    ],
    "api-staff-sampler": [
        get(kw(slug=lambda s: s.study.slug)),
        act("put", kw(slug=lambda s: s.study.slug), data=lambda s: {"sampler": "uniform"}),
    ],
    "api-staff-validation": [get(kw(slug=lambda s: s.validation.slug))],
    "api-staff-members": [
        get(kw(slug=lambda s: s.study.slug), sane=False),
        act(kwargs=kw(slug=lambda s: s.study.slug), data=lambda s: {"username": "x", "role": "x"}),
    ],
    "api-staff-member": [
        act("delete", kw(slug=lambda s: s.study.slug, username=lambda s: s.owner.username))
    ],
    "api-staff-access-log": [get(kw(slug=lambda s: s.study.slug), sane=False)],
}
for _name, _row in (
    ("occupation", "occupation"),
    ("item", "item"),
    ("task", "task"),
    ("ranking", "ranking"),
):
    PROBES[f"staff-{_name}-list"] = [LIST]
    PROBES[f"staff-{_name}-detail"] = [get(kw(pk=lambda s, r=_row: getattr(s, r).pk))]

# The admin's own pages that show no study's data (the account's, the admin's scripts).
ADMIN_SITE = {"admin:login", "admin:logout", "admin:password_change", "admin:password_change_done",
              "admin:jsi18n"}  # fmt: skip
ADMIN_OBJECT = ("history", "delete", "change", "password_change")


def _staff_patterns() -> list[tuple[str, str | None]]:
    """(route, URL name) of every pattern under a staff prefix."""
    found = []

    def walk(resolver, prefix: str, namespace: str) -> None:
        for p in resolver.url_patterns:
            if isinstance(p, URLResolver):
                ns = f"{namespace}{p.namespace}:" if p.namespace else namespace
                walk(p, prefix + str(p.pattern), ns)
            elif isinstance(p, URLPattern):
                route = prefix + str(p.pattern)
                if route.startswith(STAFF_PREFIXES):
                    found.append((route, f"{namespace}{p.name}" if p.name else None))

    walk(get_resolver(), "", "")
    return found


def _admin_of(route: str, name: str | None):
    """The (model, model admin) whose pattern this is, if any."""
    for model, model_admin in admin.site._registry.items():
        prefix = f"admin/{model._meta.app_label}/{model._meta.model_name}/"
        if route.startswith(prefix) or (name or "").startswith(
            f"admin:{model._meta.app_label}_{model._meta.model_name}_"
        ):
            return model, model_admin
    return None, None


def _row(world: World, side: Side, model) -> str:
    """The pk of ``side``'s row of ``model``, else of any row (not a study's), else none."""
    row = side.rows.get(model)
    if row is None and side is world.b:
        row = model.objects.first()
    return str(row.pk) if row is not None else MISSING


def _scrubbed(body: str, path: str, query: dict, data: dict) -> str:
    """``body`` in lower case without what the request itself said (a 404 page may echo
    the path it was asked, B's slug in it): what is left is what the server told."""
    body = body.lower()
    said = [path, *map(str, query.values()), *map(str, data.values())]
    for text in sorted(said, key=len, reverse=True):
        body = body.replace(text.lower(), "")
    return body


def _body(response) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode(errors="replace")
    return response.content.decode(errors="replace")


def _send(client: Client, method: str, path: str, query: dict, data: dict | None):
    if query:
        path += "?" + "&".join(f"{k}={v}" for k, v in query.items())
    if method == "get":
        return client.get(path)
    if path.startswith("/api/"):
        return getattr(client, method)(path, json.dumps(data or {}), "application/json")
    return getattr(client, method)(path, data or {})


def _autocomplete(side: Side) -> dict:
    """The admin's autocomplete asked for the side's study in a task's form."""
    ask = {"app_label": "annotation", "model_name": "rankingtask", "field_name": "study"}
    return {**ask, "term": side.word}


def _probes(world: World) -> tuple[list[tuple], list[str]]:
    """Every (label, probe, path of a side's row) to send, and the staff patterns no probe
    covers."""
    out, uncovered = [], []

    def add(label, probe, path):
        out.append((label, probe, path))

    for route, name in _staff_patterns():
        if name in PROBES:
            for p in PROBES[name]:
                add(name, p, lambda s, n=name, p=p: reverse(n, kwargs=(p.kwargs or _none)(s)))
        elif name in ADMIN_SITE or route == "admin/(?P<url>.*)$":
            continue
        elif name == "admin:index":
            add(name, LIST, lambda s: reverse("admin:index"))
        elif name == "admin:autocomplete":  # asked for B's study in a task's form
            add(name, get(query=_autocomplete, expect="clean", sane=False),
                lambda s: reverse("admin:autocomplete"))  # fmt: skip
        elif name == "admin:app_list":
            for label in sorted({m._meta.app_label for m in admin.site._registry}):
                add(f"{name} {label}", LIST, lambda s, a=label: reverse("admin:app_list", args=[a]))
        elif name == "admin:view_on_site":
            add(name, get(sane=False), lambda s: reverse("admin:view_on_site", args=[
                ContentType.objects.get_for_model(type(s.item)).pk, s.item.pk]))  # fmt: skip
        else:
            _admin_probe(world, route, name, add, uncovered)
    return out, uncovered


def _admin_probe(world: World, route: str, name: str | None, add, uncovered: list) -> None:
    """A model admin's pattern: its lists clean; its object pages 404 for B's row (or, for
    a model that is no study's, any row: as for an id that is not there), answered for A's."""
    model, model_admin = _admin_of(route, name)
    if model is None:
        uncovered.append(route)
        return
    suffix = name.rsplit("_", 1)[-1] if name else "redirect"
    if name and name.endswith("_password_change"):
        suffix = "password_change"
    if suffix in ("changelist", "add"):
        add(name, LIST, lambda s: reverse(name))
        return
    if suffix not in (*ADMIN_OBJECT, "redirect"):
        uncovered.append(route)
        return
    arg = route.split("<")[1].split(">")[0]

    def path(s, pk=None):
        return "/" + route.replace(f"<{arg}>", pk or _row(world, s, model))

    if suffix == "redirect":  # a plain redirect to the change page: it reads nothing
        add(route, get(expect="clean", sane=False), path)
        return
    scoped = isinstance(model_admin, StudyScopedAdmin | LineageScopedAdmin)
    mine = scoped and model in world.a.rows and suffix == "change"
    owners = model._meta.app_label == "access"  # owners' pages: A's researcher is not one
    add(name, get(sane=mine and not owners), path)


def test_no_staff_url_answers_a_researcher_with_another_studys_data(world, db):
    """Each probe once with B's rows (404 or clean), and each GET once with A's rows: A's
    researcher is answered where the probe says so, and, without the demographics
    permission, no body carries anyone's answer or the answers' key."""
    client = _client(world.researcher)
    probes, uncovered = _probes(world)
    assert not uncovered, f"staff URLs no probe covers (add one to PROBES): {uncovered}"
    failures, shown = [], []
    a, b = world.a, world.b
    for label, probe, path in probes:
        admin_page = label.startswith("admin:") and probe.expect == "404"
        query, data = (probe.query or _none)(b), (probe.data or _none)(b)
        response = _send(client, probe.method, path(b), query, data)
        body = _scrubbed(_body(response), path(b), query, data)
        status = response.status_code
        if status >= 500 or "bravo" in body:
            failures.append(f"{label} (B): {status}, B data: {'bravo' in body}")
        elif probe.expect == "404" and status != 404:
            failures.append(f"{label} (B): {status}, not 404")
        if probe.method != "get":
            continue
        mine = _send(client, "get", path(a), (probe.query or _none)(a), {})
        if _shows_answers(_body(mine), a):
            shown.append(path(a))
        answered = mine.status_code not in (403, 404) and mine.status_code < 500
        if probe.sane and (probe.kwargs or probe.query or admin_page) and not answered:
            failures.append(f"{label} (A): {mine.status_code} for A's own researcher")
    assert not failures, "\n".join(failures)
    assert not shown, f"one person's answers without the permission: {shown}"


def _shows_answers(body: str, side: Side) -> bool:
    return side.answer in body or '"demographics"' in body or f"{FIELD}," in body


def test_the_csv_export_has_no_answers_without_the_permission_and_reads_with_it_are_logged(
    world, db
):
    """The walk's GETs showed A's researcher without the permission no one's answers (the
    test above); nor does the export as CSV. A's researcher with it reads them in the
    export and on the annotator's admin page, each read logged."""
    a = world.a
    plain, demographer = _client(world.researcher), _client(world.demographer)
    export = reverse("api-export-rankings")
    csv = _body(_send(plain, "get", export, {"study": a.study.slug, "format": "csv"}, {}))
    assert a.pseudonym in csv, csv[:200]  # A's rows are there, without the answers
    assert not _shows_answers(csv, a), csv[:200]
    before = AccessLogEntry.objects.count()
    body = _body(_send(demographer, "get", export, {"study": a.study.slug}, {}))
    assert json.loads(body.splitlines()[0])["demographics"] == {FIELD: a.answer}
    page = reverse("admin:annotation_annotatorprofile_change", args=[a.profile.pk])
    assert a.answer in _body(demographer.get(page))
    whats = AccessLogEntry.objects.order_by("id")[before:].values_list("username", "what")
    assert list(whats) == [
        ("alpha-demographer", "rankings export (jsonl, with demographics)"),
        ("alpha-demographer", f"annotator {a.profile.pk}'s demographics (admin)"),
    ]
