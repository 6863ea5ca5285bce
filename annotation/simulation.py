"""Synthetic annotators: plausible demographics and rankings from a stated model.

Latent model (what a ranking is drawn from). Each item has a latent *diversity*

    z(item, annotator) = base[prompt_type]
                         + item_effect(item)
                         + group_bias[age_band] * (base[prompt_type] - 0.5)
                         + N(0, NOISE_SD)

* ``base``: stereotypical 0.2, neutral 0.5, diverse 0.8.
* ``item_effect``: N(0, ITEM_SD), fixed per image (seeded by its SHA-256), so
  annotators agree on which images are more or less stereotypical within a type.
* ``group_bias``: how strongly a group separates the types; younger bands see
  the contrast more sharply (>0), older bands less (<0), "prefer not to say" 0.
* noise: per annotator and task, seeded by (seed, annotator number, the task's
  image hashes): by content, not by the ids a database hands out (PostgreSQL
  sequences are not rolled back, SQLite's are), so the same data gives the same
  noise on either.

The ranking orders items by ``z`` ascending: most stereotypical first, as the
portal asks. Everything is seeded, so the same seed on the same data gives the
same rankings. Users are named ``synthetic-<seed>-<n>`` and their profiles have
``is_synthetic=True``; rankings are stored through ``annotation.services``.
"""

from __future__ import annotations

import random

from django.contrib.auth import get_user_model

from . import services
from .models import DemographicField, Item, RankingTask

BASE = {"stereotypical": 0.2, "neutral": 0.5, "diverse": 0.8}
ITEM_SD = 0.08
NOISE_SD = 0.12
GROUP_BIAS = {
    "18-24": 0.4,
    "25-34": 0.25,
    "35-44": 0.1,
    "45-54": 0.0,
    "55-64": -0.15,
    "65-74": -0.3,
    "75 or over": -0.4,
}
PREFER_NOT = DemographicField.PREFER_NOT_TO_SAY
FREE_TEXT = {
    "nationality": [
        "British",
        "Indian",
        "Nigerian",
        "Brazilian",
        "German",
        "Chinese",
        "American",
        "Mexican",
        "Kenyan",
        "Japanese",
        "Filipino",
        "Egyptian",
    ],
    "country_of_residence": [
        "United Kingdom",
        "India",
        "Nigeria",
        "Brazil",
        "Germany",
        "China",
        "United States",
        "Mexico",
        "Kenya",
        "Japan",
        "Canada",
        "Spain",
    ],
    "ethnicity": [
        "White",
        "Black African",
        "South Asian",
        "East Asian",
        "Mixed",
        "Latino",
        "Arab",
        "Black Caribbean",
    ],
    "first_language": [
        "English",
        "Hindi",
        "Yoruba",
        "Portuguese",
        "German",
        "Mandarin",
        "Spanish",
        "Japanese",
        "Arabic",
        "Swahili",
    ],
}


def draw_demographics(rng: random.Random, fields: list[DemographicField]) -> dict:
    """One plausible answer per active field; about 1 in 10 'prefer not to say', 1 in 20 blank."""
    answers = {}
    for f in fields:
        roll = rng.random()
        if roll < 0.05:
            continue
        if roll < 0.15:
            answers[f.key] = PREFER_NOT
        elif f.choices:
            answers[f.key] = rng.choice(f.choices)
        else:
            answers[f.key] = rng.choice(FREE_TEXT.get(f.key, ["other"]))
    return answers


def item_effect(item: Item) -> float:
    return random.Random(item.image_sha256).gauss(0.0, ITEM_SD)


def latent_order(items: list[Item], demographics: dict, rng: random.Random) -> list[int]:
    """Item ids by latent diversity ascending (most stereotypical first)."""
    bias = GROUP_BIAS.get(demographics.get("age_band"), 0.0)
    scores = {}
    for item in sorted(items, key=lambda i: i.pk):
        base = BASE[item.prompt.prompt_type]
        scores[item.pk] = base + item_effect(item) + bias * (base - 0.5) + rng.gauss(0.0, NOISE_SD)
    return sorted(scores, key=lambda pk: (scores[pk], pk))


def simulate(count: int, tasks_per_annotator: int, seed: int = 0) -> dict:
    """Create (or reuse) ``count`` synthetic annotators, each ranking up to M tasks."""
    User = get_user_model()
    fields = list(DemographicField.objects.filter(active=True))
    made_users = rankings = 0
    for n in range(count):
        user, new_user = User.objects.get_or_create(username=f"synthetic-{seed}-{n:04d}")
        if new_user:
            user.set_unusable_password()
            user.save(update_fields=["password"])
            made_users += 1
        profile = services.get_profile(user)
        if not profile.is_synthetic or profile.quota < tasks_per_annotator:
            profile.is_synthetic = True
            profile.quota = max(profile.quota, tasks_per_annotator)
            profile.save(update_fields=["is_synthetic", "quota"])
        services.give_consent(profile)
        if new_user or not profile.demographics:
            answers = draw_demographics(random.Random(f"{seed}:{n}:d"), fields)
            services.save_demographics(profile, answers)
        done = profile.rankings.count()
        while done < tasks_per_annotator:
            assignment = services.next_task(profile)
            if assignment is None:
                break
            task = RankingTask.objects.get(pk=assignment.task_id)
            items = list(task.items.select_related("prompt"))
            hashes = ",".join(sorted(item.image_sha256 for item in items))
            rng = random.Random(f"{seed}:{n}:{hashes}")
            order = latent_order(items, profile.demographics, rng)
            seconds = round(max(5.0, rng.gauss(8.0 * len(items), 10.0)), 1)
            _, created = services.submit_ranking(profile, task.pk, order, seconds_spent=seconds)
            rankings += created
            done += 1
    return {"annotators": made_users, "rankings": rankings}
