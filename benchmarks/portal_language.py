"""The portal's submit path in Dutch against English (issue 39): CPU per request, paired.

In one process (Django's test client, a throwaway SQLite, eager tasks), a study that
offers English and Dutch; two participants join by its entry link, one reading English,
one Dutch (``lang``), and rank the same number of tasks, taking turns and alternating who
goes first. A step is what a browser does per task: the ranking page (GET), its submit
(POST) and the redirect's page. Each step's CPU time (``time.process_time``) is kept;
printed: the median ms a step per language and the ratio Dutch / English, with the date
and the load average. ``benchmarks/portal_load.py --compare`` measures the API's path
against an earlier tree.

    .venv/bin/python benchmarks/portal_language.py --tasks 150
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import arguments, load  # noqa: E402
from pipeline import _setup  # noqa: E402


def _participant(study, lang: str):
    from django.test import Client
    from django.urls import reverse

    from annotation.models.studies import Participation

    link = reverse("portal:join", args=[study.slug]) + f"?pid=bench-{lang}&lang={lang}"
    browser = Client(REMOTE_ADDR="198.51.100.9")
    page = browser.get(link)
    browser.post(link, {"action": "agree", "token": page.context["token"]})
    assert Participation.objects.filter(language=lang).count() == 1
    return browser


def _step(browser) -> float:
    from django.urls import reverse

    start = time.process_time()
    page = browser.get(reverse("portal:rank"))
    if page.context is None or page.context.get("assignment") is None:
        from annotation.models.studies import Participation

        why = list(Participation.objects.values_list("language", "outcome", "screen_out_reason"))
        where = f"{page.get('Location')}: {why}"
        raise SystemExit(f"portal_language: no task to rank ({page.status_code} {where})")
    assignment = page.context["assignment"]
    order = ",".join(map(str, assignment.shown_order))
    browser.post(
        reverse("portal:rank"), {"task_id": assignment.task_id, "order": order}, follow=True
    )
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=150, help="ranked by each participant")
    args = arguments(parser, {"tasks": 5})
    with tempfile.TemporaryDirectory(prefix="portal-language-") as folder:
        os.environ["STEREORANK_THROTTLE_JOIN"] = "1000000/hour"
        os.environ["STEREORANK_THROTTLE_SUBMIT"] = "1000000/min"
        # two scripted participants are no crowd: the exclusion rule stays out of the way
        os.environ["STEREORANK_QUALITY_POLICY"] = '{"untouched_max_rate": 1.0}'
        _setup("", Path(folder))
        from django.conf import settings
        from django.test.utils import setup_test_environment

        setup_test_environment()  # the test client's page contexts (the join form's token)
        from django.db.models import Count

        from annotation.models import Ranking, Study

        settings.STEREORANK["ANNOTATOR_QUOTA"] = args.tasks + 1
        study = Study.objects.create(
            slug="lang",
            name="Languages",
            platform=Study.Platform.GENERIC,
            languages=["en", "nl"],
            tasks_per_participant=args.tasks + 1,
        )
        _tasks(study, args.tasks + 1)
        browsers = {lang: _participant(study, lang) for lang in ("en", "nl")}
        for browser in browsers.values():  # warm-up: first-call costs out of the figures
            _step(browser)
        spent: dict[str, list[float]] = {"en": [], "nl": []}
        for i in range(args.tasks - 1):
            turn = ("en", "nl") if i % 2 == 0 else ("nl", "en")
            for lang in turn:
                spent[lang].append(_step(browsers[lang]))
        stored = dict(Ranking.objects.values_list("language").annotate(n=Count("id")))
        en, nl = (statistics.median(spent[x]) * 1000 for x in ("en", "nl"))
        print(f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, load {load()}")
        print(f"{len(spent['en'])} steps each (ranking page, submit, next page), CPU median:")
        print(f"  English {en:.2f} ms, Dutch {nl:.2f} ms: Dutch / English = {nl / en:.3f}")
        print(f"  rankings stored by language: {stored}")


def _tasks(study, n: int) -> None:
    """``n`` tasks of 3 items of one occupation in ``study``, each open to both (as the
    tests' ``make_tasks``)."""
    from annotation.models import Item, Occupation, Prompt, PromptType, RankingTask, TaskItem

    occupation, _ = Occupation.objects.get_or_create(name="nurse", slug="nurse")
    original = Prompt.objects.create(
        occupation=occupation, prompt_type=PromptType.NEUTRAL, text="A photo of a nurse"
    )
    for t in range(n):
        task = RankingTask.objects.create(study=study, occupation=occupation, overlap=2)
        for i in range(3):
            prompt = Prompt.objects.create(
                occupation=occupation,
                prompt_type=PromptType.NEUTRAL,
                origin=original,
                text=f"nurse {t}-{i}",
            )
            item = Item.objects.create(
                study=study, prompt=prompt, image=f"items/{t}-{i}.png", image_sha256=f"{t}-{i}"
            )
            TaskItem.objects.create(task=task, item=item)


if __name__ == "__main__":
    main()
