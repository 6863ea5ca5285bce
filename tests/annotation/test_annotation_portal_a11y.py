"""The portal's accessible markup, readable without a browser: the task count in the
title, messages as a list in a status region, help texts and check boxes named."""

import re

from django.urls import reverse

from annotation.models import DemographicField


def test_the_rank_title_counts_tasks_and_a_saved_ranking_is_news_in_a_list(
    portal_client, make_tasks
):
    make_tasks(2, k=3)
    client = portal_client()
    page = client.get(reverse("portal:rank")).content.decode()
    assert re.search(r"<title>Task 1 of 20: Nurse", page)
    task = re.search(r'name="task_id" value="(\d+)"', page).group(1)
    order = re.search(r'name="order" id="order-input" value="([\d,]+)"', page).group(1)
    after = client.post(reverse("portal:rank"), {"task_id": task, "order": order}, follow=True)
    html = after.content.decode()
    assert re.search(r"<title>Task 2 of 20", html)
    region = re.search(
        r'<div class="messages-region" id="messages" role="status"[^>]*>(.*?)</div>', html, re.S
    )
    assert region and re.search(
        r'<ul class="messages">\s*<li class="message success">Ranking saved.</li>', region.group(1)
    )


def test_help_texts_are_linked_and_prefer_not_boxes_named_by_their_question(portal_client):
    DemographicField.objects.create(key="country", label="Country", help_text="Where you live.")
    page = portal_client().get(reverse("portal:demographics")).content.decode()
    described = re.search(r'<input[^>]*name="country"[^>]*aria-describedby="([^"]+)"', page).group(
        1
    )
    assert re.search(rf'id="{described}">Where you live.<', page)
    label = re.search(
        r'<label class="check" for="id_country__prefer_not">(.*?)</label>', page, re.S
    )
    text = re.sub(r"<[^>]+>|\s+", " ", label.group(1)).split()
    assert " ".join(text) == "Country: prefer not to say"
