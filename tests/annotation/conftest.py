import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from annotation import services
from annotation.models import Item, Occupation, Prompt, PromptType, RankingTask, TaskItem


@pytest.fixture
def make_tasks(db):
    """make_tasks(n, k, overlap) -> list of tasks, each with k items of one occupation."""

    def make(n: int = 2, k: int = 3, overlap: int = 1) -> list[RankingTask]:
        occupation, _ = Occupation.objects.get_or_create(name="nurse", slug="nurse")
        original, _ = Prompt.objects.get_or_create(
            occupation=occupation, prompt_type=PromptType.NEUTRAL, origin=None,
            defaults={"text": "A photo of a nurse"},
        )
        tasks = []
        for _ in range(n):
            task = RankingTask.objects.create(occupation=occupation, overlap=overlap)
            for i in range(k):
                prompt = Prompt.objects.create(
                    occupation=occupation, prompt_type=PromptType.NEUTRAL, origin=original,
                    text=f"task {task.pk} prompt {i}",
                )
                item = Item.objects.create(
                    prompt=prompt, image=f"items/{task.pk}-{i}.png", image_sha256=f"{task.pk}-{i}"
                )
                TaskItem.objects.create(task=task, item=item)
            tasks.append(task)
        return tasks

    return make


@pytest.fixture
def annotator(db):
    """annotator(name, consent=True, staff=False, synthetic=False) -> logged-in APIClient."""

    def make(name: str, consent: bool = True, staff: bool = False, synthetic: bool = False):
        user = get_user_model().objects.create_user(name, password="pw-123456", is_staff=staff)
        profile = services.get_profile(user)
        if synthetic:
            profile.is_synthetic = True
            profile.save()
        if consent:
            services.give_consent(profile)
        client = APIClient()
        client.force_authenticate(user)
        client.profile = profile
        return client

    return make
