"""A Prolific study with participants in every state the review tells apart, and the fake
Prolific server configured as the platform (``tests/crowd_server.py``)."""

from __future__ import annotations

import io
import secrets

from django.contrib.auth import get_user_model
from django.core.management import call_command

from annotation.models import AnnotatorProfile, Participation, Ranking, Study
from annotation.participants import services
from annotation.quality import standing
from tests.crowd_server import FakeProlific

TOKEN = "pk_live_" + secrets.token_hex(20)
SECRET = "whsec-" + secrets.token_hex(16)


def configure(settings) -> FakeProlific:
    fake = FakeProlific(TOKEN, client_timeout=0.5)
    settings.STEREORANK = {
        **settings.STEREORANK,
        "SITE_URL": "https://study.example.org",
        "PROLIFIC": {
            "TOKEN": TOKEN,
            "API_URL": fake.url,
            "WEBHOOK_SECRET": SECRET,
            "TIMEOUT": 0.5,
            "BACKOFF_S": 0.01,
        },
    }
    return fake


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=out)
    return out.getvalue()


def make_study(slug: str = "wave") -> Study:
    run(
        "create_study", slug, "--platform", "prolific", "--completion-code", "C0MPL3T3",
        "--screen-out-code", "SCR33N",
    )  # fmt: skip
    run("consent", "--study", slug, "--demo")
    run("study_status", slug, "open")
    return Study.objects.get(slug=slug)


def participant(study: Study, name: str, **fields) -> Participation:
    user = get_user_model().objects.create_user(name, password=None)
    profile = AnnotatorProfile.objects.create(study=study, user=user)
    services.give_consent(profile)
    return Participation.objects.create(
        study=study,
        annotator=profile,
        external_id_hash=secrets.token_hex(32),
        session_id=secrets.token_hex(12),
        **fields,
    )


def rank(store_ranking, part: Participation, task, *, fail_check=False, width=None) -> Ranking:
    items = list(task.items.values_list("pk", flat=True))
    order = items[::-1] if fail_check else items
    ranking = store_ranking(part.annotator, task, order, seconds=30)
    if width is not None:
        Ranking.objects.filter(pk=ranking.pk).update(viewport_width=width)
    return ranking


def checks(tasks) -> list:
    """Make each task an attention check: its first card must come first."""
    for task in tasks:
        first = task.items.order_by("pk").first()
        task.check_item, task.check_position = first, 0
        task.save(update_fields=["check_item", "check_position"])
    return tasks


def exclude(part: Participation) -> None:
    standing.apply_policy(part.annotator)
    part.annotator.refresh_from_db()
    assert part.annotator.status == "excluded", part.annotator.status
