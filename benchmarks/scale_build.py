"""Build a study of N rankings directly in PostgreSQL, for ``benchmarks/scale.py``.

The catalogue (``load_catalogue``: 40 occupations, the demographic fields, the
consent text), then in SQL: 10,000 annotators with demographics and consent,
``ITEMS_PER_OCCUPATION`` prompt-image items per occupation, tasks of K = 6 items
(20% of the ranked ones with overlap 3, the rest 1, as the agreement subset) plus
``OPEN_TASKS`` open tasks, N rankings (orders near a planted per-item preference,
shown in a random order) and their ranked items, all by ``INSERT ... SELECT`` over
``generate_series`` (no Python object per row).
"""

from __future__ import annotations

import math

ANNOTATORS = 10_000
ITEMS_PER_OCCUPATION = 60
K = 6
OPEN_TASKS = 2_000
SHARED, SHARED_OVERLAP = 0.2, 3
CHOICES = {
    "age_band": ["18-24", "25-34", "35-44", "45-54", "55-64", "65-74", "75 or over"],
    "gender_identity": ["woman", "man", "non-binary", "prefer not to say"],
    "religion_or_belief": ["no religion", "Christian", "Muslim", "Hindu", "Buddhist", "Jewish"],
    "disability": ["yes", "no", "no", "no"],
}


def task_counts(rankings: int) -> tuple[int, int]:
    """(tasks with overlap 3, tasks with overlap 1) holding ``rankings`` rankings."""
    tasks = math.ceil(rankings / (SHARED * SHARED_OVERLAP + (1 - SHARED)))
    shared = int(tasks * SHARED)
    return shared, rankings - shared * SHARED_OVERLAP


def _array(values: list[str]) -> str:
    return "ARRAY[" + ", ".join("'" + v.replace("'", "''") + "'" for v in values) + "]"


def _annotators_sql(prefix: str, study: int, consent: int) -> list[str]:
    """``ANNOTATORS`` users named ``prefix`` and a number, their profiles in ``study`` with
    demographics (a fixed function of the user id) and their consent to text ``consent``."""
    demographics = ", ".join(
        f"'{key}', ({_array(values)})[1 + abs(hashtext(u.id || '{key}')) % {len(values)}]"
        for key, values in CHOICES.items()
    )
    return [
        f"""INSERT INTO auth_user (password, is_superuser, username, first_name, last_name,
            email, is_staff, is_active, date_joined)
            SELECT '!', false, '{prefix}' || g, '', '', '', false, true, now()
            FROM generate_series(1, {ANNOTATORS}) g""",
        f"""INSERT INTO annotation_annotatorprofile (study_id, user_id, demographics, quota,
            is_synthetic, synthetic_kind, status, created_at)
            SELECT {study}, u.id, jsonb_build_object({demographics}), 1000000, false,
                   '', 'ok', now()
            FROM auth_user u WHERE u.username ~ '^{prefix}[0-9]+$'""",
        f"""INSERT INTO annotation_consent (annotator_id, text_id, given_at)
            SELECT p.id, {consent}, now() FROM annotation_annotatorprofile p
            WHERE p.study_id = {study}""",
    ]


def build(rankings: int, step) -> dict:
    """The study of ``rankings`` rankings in the (empty, migrated) database; ``step(name)``
    is called after each stage (the progress bar). Returns what was built."""
    from django.core.management import call_command
    from django.db import connection

    from annotation.catalogue.loading import ensure_consent_text

    call_command("load_catalogue", "--placeholder-images", "0", verbosity=0)
    consent = ensure_consent_text()
    shared, single = task_counts(rankings)
    sql = [
        *_annotators_sql("bench", consent.study_id, consent.pk),
        # items: prompts of every occupation, one placeholder image each
        # paraphrases of the catalogue's prompts (one original per occupation and type)
        f"""INSERT INTO annotation_prompt (occupation_id, prompt_type, text, origin_id)
            SELECT o.occupation_id, o.prompt_type, 'bench prompt ' || o.id || '-' || g, o.id
            FROM annotation_prompt o, generate_series(1, {ITEMS_PER_OCCUPATION // 3}) g
            WHERE o.origin_id IS NULL""",
        f"""INSERT INTO annotation_item (study_id, prompt_id, image, image_sha256, generator,
            is_placeholder, created_at)
            SELECT {consent.study_id}, p.id, 'items/bench.png', md5(p.id::text), '{{}}', true, now()
            FROM annotation_prompt p WHERE p.text LIKE 'bench prompt %'""",
        # tasks: shared ones (overlap 3), single ones, then the open ones
        f"""INSERT INTO annotation_rankingtask (study_id, occupation_id, overlap, ranking_count,
            priority, is_gold, card_text, created_at)
            SELECT {consent.study_id}, o.ids[1 + g % array_length(o.ids, 1)],
                   CASE WHEN g <= {shared} THEN {SHARED_OVERLAP} ELSE 1 END,
                   CASE WHEN g <= {shared} THEN {SHARED_OVERLAP}
                        WHEN g <= {shared + single} THEN 1 ELSE 0 END,
                   0, false, 'prompt', now()
            FROM generate_series(1, {shared + single + OPEN_TASKS}) g,
                 (SELECT array_agg(id ORDER BY id) AS ids FROM annotation_occupation) o""",
        f"""INSERT INTO annotation_taskitem (task_id, item_id)
            SELECT t.id, i.ids[1 + ((t.id * 7 + j) % array_length(i.ids, 1))]
            FROM annotation_rankingtask t
            JOIN (SELECT p.occupation_id, array_agg(it.id ORDER BY it.id) AS ids
                  FROM annotation_item it JOIN annotation_prompt p ON p.id = it.prompt_id
                  WHERE it.image = 'items/bench.png' GROUP BY p.occupation_id) i
              ON i.occupation_id = t.occupation_id,
            generate_series(0, {K - 1}) j""",
        # rankings: order near a planted preference (item id mod 11), shown at random
        f"""INSERT INTO annotation_ranking (task_id, annotator_id, "order", shown_order,
            seconds_spent, created_at)
            SELECT t.id, a.ids[1 + ((t.id * 7 + j * 3331) % {ANNOTATORS})],
                (SELECT jsonb_agg(ti.item_id ORDER BY (ti.item_id % 11) + random() * 8)
                 FROM annotation_taskitem ti WHERE ti.task_id = t.id),
                (SELECT jsonb_agg(ti.item_id ORDER BY random())
                 FROM annotation_taskitem ti WHERE ti.task_id = t.id),
                10 + random() * 50, now()
            FROM annotation_rankingtask t,
                 (SELECT array_agg(id ORDER BY id) AS ids FROM annotation_annotatorprofile) a,
                 generate_series(0, {SHARED_OVERLAP - 1}) j
            WHERE j < t.ranking_count""",
        """INSERT INTO annotation_rankeditem (ranking_id, item_id, position, shown_position)
            SELECT r.id, e.value::int, e.n - 1,
                   (SELECT s.n - 1 FROM jsonb_array_elements_text(r.shown_order)
                    WITH ORDINALITY s(value, n) WHERE s.value = e.value)
            FROM annotation_ranking r,
                 jsonb_array_elements_text(r."order") WITH ORDINALITY e(value, n)""",
        "ANALYZE",
    ]
    with connection.cursor() as cursor:
        for statement in sql:
            cursor.execute(statement)
            step((statement.split() + ["", "", "analyze"])[2])
        cursor.execute("SELECT count(*) FROM annotation_ranking")
        (stored,) = cursor.fetchone()
    return {"rankings": stored, "tasks": shared + single + OPEN_TASKS, "open_tasks": OPEN_TASKS}


VALIDATION_SLUG = "bench-val"
IMAGES_PER_CONDITION_PROMPT = 3


def build_validation(rankings: int) -> dict:
    """A blinded validation study of ``rankings`` rankings beside the collection one: two
    conditions (the catalogue's original prompts as written and rewritten), 3 images of
    each condition prompt, tasks of one occupation with K / 2 images of each condition
    (overlap 1), 10,000 annotators of its own with demographics and consent, and orders
    that put the rewritten images lower (less stereotypical) more often than not."""
    from django.db import connection

    from annotation.catalogue.loading import ensure_consent_text
    from annotation.models import Prompt, Study
    from annotation.models.validation import Condition, ConditionPrompt
    from annotation.studies.lifecycle import create_study

    study = create_study(VALIDATION_SLUG, Study.Kind.VALIDATION, task_size=K, overlap=1)
    Study.objects.filter(pk=study.pk).update(status=Study.Status.OPEN)
    consent = ensure_consent_text(study=study)
    roles = (("original", Condition.Role.BASELINE, Condition.Source.ORIGINAL),
             ("rewritten", Condition.Role.TREATMENT, Condition.Source.FILE))  # fmt: skip
    conditions = [
        Condition.objects.create(study=study, name=name, role=role, source=source)
        for name, role, source in roles
    ]
    originals = list(Prompt.objects.filter(origin__isnull=True))  # the catalogue's own
    ConditionPrompt.objects.bulk_create(
        ConditionPrompt(condition=c, prompt=p, text=f"{c.name}: {p.text}")
        for c in conditions
        for p in originals
    )
    treatment = conditions[1].pk
    image = "'items/bench-val-' || cp.id || '-' || g || '.png'"
    sql = [
        *_annotators_sql("benchv", study.pk, consent.pk),
        f"""INSERT INTO annotation_item (study_id, prompt_id, image, image_sha256, generator,
            is_placeholder, created_at)
            SELECT {study.pk}, cp.prompt_id, {image}, md5({image}), '{{}}', true, now()
            FROM annotation_conditionprompt cp,
                 generate_series(1, {IMAGES_PER_CONDITION_PROMPT}) g
            WHERE cp.condition_id IN ({conditions[0].pk}, {treatment})""",
        f"""INSERT INTO annotation_conditionimage (item_id, prompt_id, seed)
            SELECT i.id, cp.id, g
            FROM annotation_conditionprompt cp
            CROSS JOIN generate_series(1, {IMAGES_PER_CONDITION_PROMPT}) g
            JOIN annotation_item i ON i.image = {image} AND i.study_id = {study.pk}
            WHERE cp.condition_id IN ({conditions[0].pk}, {treatment})""",
        f"""INSERT INTO annotation_rankingtask (study_id, occupation_id, overlap, ranking_count,
            priority, is_gold, card_text, created_at)
            SELECT {study.pk}, o.ids[1 + g % array_length(o.ids, 1)], 1, 1, 0, false,
                   'none', now()
            FROM generate_series(1, {rankings}) g,
                 (SELECT array_agg(id ORDER BY id) AS ids FROM annotation_occupation) o""",
        # K / 2 images of each condition of the task's occupation
        f"""INSERT INTO annotation_taskitem (task_id, item_id)
            SELECT t.id, c.ids[1 + ((t.id * 7 + j) % array_length(c.ids, 1))]
            FROM annotation_rankingtask t
            JOIN (SELECT p.occupation_id, cp.condition_id,
                         array_agg(ci.item_id ORDER BY ci.item_id) AS ids
                  FROM annotation_conditionimage ci
                  JOIN annotation_conditionprompt cp ON cp.id = ci.prompt_id
                  JOIN annotation_prompt p ON p.id = cp.prompt_id
                  GROUP BY p.occupation_id, cp.condition_id) c
              ON c.occupation_id = t.occupation_id,
            generate_series(0, {K // 2 - 1}) j
            WHERE t.study_id = {study.pk}""",
        f"""INSERT INTO annotation_ranking (task_id, annotator_id, "order", shown_order,
            seconds_spent, created_at)
            SELECT t.id, a.ids[1 + ((t.id * 7) % {ANNOTATORS})],
                (SELECT jsonb_agg(ti.item_id ORDER BY
                        (ci.prompt_id IN (SELECT id FROM annotation_conditionprompt
                                          WHERE condition_id = {treatment}))::int
                        + random() * 2)
                 FROM annotation_taskitem ti
                 JOIN annotation_conditionimage ci ON ci.item_id = ti.item_id
                 WHERE ti.task_id = t.id),
                (SELECT jsonb_agg(ti.item_id ORDER BY random())
                 FROM annotation_taskitem ti WHERE ti.task_id = t.id),
                10 + random() * 50, now()
            FROM annotation_rankingtask t,
                 (SELECT array_agg(id ORDER BY id) AS ids FROM annotation_annotatorprofile
                  WHERE study_id = {study.pk}) a
            WHERE t.study_id = {study.pk}""",
        f"""INSERT INTO annotation_rankeditem (ranking_id, item_id, position, shown_position)
            SELECT r.id, e.value::int, e.n - 1,
                   (SELECT s.n - 1 FROM jsonb_array_elements_text(r.shown_order)
                    WITH ORDINALITY s(value, n) WHERE s.value = e.value)
            FROM annotation_ranking r
            JOIN annotation_rankingtask t ON t.id = r.task_id AND t.study_id = {study.pk},
                 jsonb_array_elements_text(r."order") WITH ORDINALITY e(value, n)""",
        "ANALYZE",
    ]
    with connection.cursor() as cursor:
        for statement in sql:
            cursor.execute(statement)
        cursor.execute(
            "SELECT count(*) FROM annotation_ranking r JOIN annotation_rankingtask t "
            "ON t.id = r.task_id WHERE t.study_id = %s",
            [study.pk],
        )
        (stored,) = cursor.fetchone()
    return {"rankings": stored, "images": 2 * len(originals) * IMAGES_PER_CONDITION_PROMPT}
