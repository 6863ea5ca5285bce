"""The question-format migration at scale, and the label query before and after tiers
(issue 40).

On a PostgreSQL database of its own (``--db``, on ``DATABASE_URL``'s server): the schema
migrated to ``0022_content_languages`` (before tiers), then ``--rankings`` rankings of 6
items written in bulk by SQL (one study, 1,000 tasks, ``rankings / 1000`` annotators, every
one with consent: ``generate_series``, minutes at 1M), then ``migrate`` to the latest,
timed. Then the labels query of ``annotation.rankings.label_sql`` as it is (a tier's place:
``rank() + count(*) over w``) and as it was before tiers (``row_number() over w``), run
alternately ``--repeats`` times each on the same data, their median times and the ratio.
The database is dropped at the end.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/test \\
        .venv/bin/python benchmarks/migrate_formats.py --rankings 1000000
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import arguments, load  # noqa: E402

BEFORE = "0022_content_languages"
OLD_PLACE = "2 * (row_number() OVER w - 1) AS pos2"
NEW_PLACE = "rank() OVER w + count(*) OVER w - 2 AS pos2"


def parse():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rankings", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--db", default="bench_formats")
    return arguments(parser, {"rankings": 2000, "repeats": 1})


def fresh_database(name: str) -> str:
    import psycopg

    server = os.environ["DATABASE_URL"]
    admin = urlunsplit(urlsplit(server)._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return urlunsplit(urlsplit(server)._replace(path=f"/{name}"))


def fill(rankings: int) -> None:
    """The rankings in bulk, as the schema before tiers holds them: the small tables through
    the historical models of 0022, the rankings and their items by SQL."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    old = MigrationExecutor(connection).loader.project_state(("annotation", BEFORE)).apps

    def model(name: str, app: str = "annotation"):
        return old.get_model(app, name).objects

    tasks, people = 1000, max(1, rankings // 1000)
    study = model("Study").get(slug="default")
    occupation = model("Occupation").create(name="nurse", slug="nurse")
    prompt = model("Prompt").create(occupation=occupation, prompt_type="neutral", text="A nurse")
    model("Item").bulk_create(
        old.get_model("annotation", "Item")(
            prompt=prompt, image=f"{i}.png", image_sha256=str(i), study=study
        )
        for i in range(6)
    )
    task = old.get_model("annotation", "RankingTask")
    model("RankingTask").bulk_create(
        task(study=study, occupation=occupation, overlap=people, ranking_count=people)
        for _ in range(tasks)
    )
    user = old.get_model("auth", "User")
    model("User", "auth").bulk_create(user(username=f"u{n}", password="!") for n in range(people))
    profile = old.get_model("annotation", "AnnotatorProfile")
    model("AnnotatorProfile").bulk_create(
        profile(user_id=u, study=study) for u in model("User", "auth").values_list("pk", flat=True)
    )
    text = model("ConsentText").create(study=study, version=1, text="t", language="en")
    consent = old.get_model("annotation", "Consent")
    model("Consent").bulk_create(
        consent(annotator_id=p, text=text)
        for p in model("AnnotatorProfile").values_list("pk", flat=True)
    )
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH t AS (SELECT array_agg(id ORDER BY id) AS ids FROM annotation_rankingtask),
                 a AS (SELECT array_agg(id ORDER BY id) AS ids FROM annotation_annotatorprofile),
                 i AS (SELECT array_agg(id ORDER BY id) AS ids FROM annotation_item)
            INSERT INTO annotation_ranking (task_id, annotator_id, "order", shown_order,
                language, created_at)
            SELECT t.ids[1 + g %% %(tasks)s], a.ids[1 + g / %(tasks)s], to_jsonb(i.ids),
                   to_jsonb(i.ids), '', now()
            FROM generate_series(0, %(n)s - 1) g, t, a, i
            """,
            {"tasks": tasks, "n": tasks * people},
        )
        cursor.execute(
            """
            INSERT INTO annotation_rankeditem (ranking_id, item_id, position, shown_position)
            SELECT r.id, (r."order" ->> p)::bigint, (p + r.id) % 6, p
            FROM annotation_ranking r, generate_series(0, 5) p
            """
        )
        cursor.execute("ANALYZE")


def time_labels(repeats: int) -> dict:
    from annotation.rankings import label_sql

    original = label_sql._sql
    times: dict[str, list[float]] = {"before": [], "after": []}

    def old_sql(fields, counted):
        return original(fields, counted).replace(NEW_PLACE, OLD_PLACE)

    for _ in range(repeats):
        for name, sql in (("before", old_sql), ("after", original)):
            label_sql._sql = sql
            started = time.perf_counter()
            got = label_sql.aggregated_labels(False, [])
            times[name].append(time.perf_counter() - started)
    label_sql._sql = original
    before, after = statistics.median(times["before"]), statistics.median(times["after"])
    return {"before_s": before, "after_s": after, "ratio": after / before, "items": len(got.labels)}


def main() -> None:
    args = parse()
    print(f"load average before: {load()}", file=sys.stderr)
    os.environ["DATABASE_URL"] = fresh_database(args.db)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "web.settings")
    os.environ.setdefault("DJANGO_SECRET_KEY", "bench-migrate-formats")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", "annotation", BEFORE, verbosity=0)
    call_command("migrate", verbosity=0)  # the other apps, to their latest
    call_command("migrate", "annotation", BEFORE, verbosity=0)
    started = time.perf_counter()
    fill(args.rankings)
    built = time.perf_counter() - started
    started = time.perf_counter()
    call_command("migrate", verbosity=0)
    migrated = time.perf_counter() - started
    labels = time_labels(args.repeats)
    print(
        f"{args.rankings} rankings built in {built:.0f} s; the migration to tiers took "
        f"{migrated:.1f} s; labels query {labels['before_s']:.2f} s before tiers, "
        f"{labels['after_s']:.2f} s after (x{labels['ratio']:.2f})"
    )
    print(
        f'{{"rankings": {args.rankings}, "build_s": {built:.1f}, "migrate_s": {migrated:.2f}, '
        f'"labels_before_s": {labels["before_s"]:.3f}, "labels_after_s": {labels["after_s"]:.3f}, '
        f'"ratio": {labels["ratio"]:.3f}}}'
    )
    print(f"load average after: {load()}", file=sys.stderr)
    from django.db import connections

    connections.close_all()
    drop_database(args.db)


def drop_database(name: str) -> None:
    import psycopg

    admin = urlunsplit(urlsplit(os.environ["DATABASE_URL"])._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    main()
