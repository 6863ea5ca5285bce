"""The admin's staff pages: a retraining schedule edited as fields (checked, round-tripped
into the kwargs the scheduled step reads), shown as fields on the Schedules dashboard; and
help texts that read as text (the admin renders them as HTML)."""

import io
import json
import re
from dataclasses import asdict, fields
from html import unescape

import pytest
from django.contrib import admin
from django.core.management import call_command
from django.forms import CheckboxInput
from django.test import RequestFactory
from django.urls import reverse
from django.utils.html import strip_tags
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from annotation.models import DemographicField, Study
from annotation.studies import lifecycle as studies
from training.admin import ScheduleForm, schedule_fieldsets
from training.models import RetrainDecision
from training.schedule_settings import TASK_NAME, ScheduleSettings
from training.tasks import scheduled_retrain

OUR_APPS = ("annotation", "training", "scoring", "core")


@pytest.fixture
def schedule(db) -> PeriodicTask:
    """The default schedule as ``manage.py setup_schedule`` makes it, a second collection
    study, a validation study and a demographic field to choose from."""
    studies.default_study()
    Study.objects.create(slug="wave-2", name="Second wave", platform="generic")
    Study.objects.create(slug="val", name="Validation", platform="generic", kind="validation")
    DemographicField.objects.get_or_create(key="age_band", defaults={"label": "Age band"})
    call_command("setup_schedule", stdout=io.StringIO())
    return PeriodicTask.objects.get(task=TASK_NAME)


def change_url(task: PeriodicTask) -> str:
    return reverse("admin:django_celery_beat_periodictask_change", args=[task.pk])


def form_data(response) -> dict:
    """What the change form would send back unchanged, from its fields' shown values."""
    form = response.context["adminform"].form
    data = {}
    for name, field in form.fields.items():
        value = form[name].value()
        if isinstance(field.widget, CheckboxInput):
            if value:
                data[name] = "on"
        elif isinstance(value, list | tuple):
            data[name] = [str(v) for v in value]
        else:
            data[name] = "" if value is None else str(value)
    return data


def test_the_change_form_shows_each_setting_as_a_field_not_json(admin_client, schedule):
    response = admin_client.get(change_url(schedule))
    html = response.content.decode()
    assert 'name="kwargs"' not in html and 'name="args"' not in html
    form = response.context["adminform"].form
    assert isinstance(form, ScheduleForm)
    for setting in fields(ScheduleSettings):
        assert f'name="{setting.name}"' in html, setting.name
    assert form["min_new_rankings"].value() == 50 and form["promotion"].value() == "manual"
    assert (form["every"].value(), form["period"].value()) == (60, "minutes")
    # a validation study is not offered: its rankings never train
    assert 'value="wave-2"' in html and 'value="val"' not in html


def test_saving_the_form_unchanged_keeps_the_same_kwargs(admin_client, schedule):
    before = json.loads(schedule.kwargs)
    data = form_data(admin_client.get(change_url(schedule)))
    assert admin_client.post(change_url(schedule), data).status_code == 302
    schedule.refresh_from_db()
    assert (
        json.loads(schedule.kwargs) == before == json.loads(json.dumps(asdict(ScheduleSettings())))
    )
    assert (schedule.interval.every, schedule.interval.period) == (60, "minutes")


def test_edited_fields_become_the_kwargs_the_scheduled_step_reads(admin_client, schedule):
    data = form_data(admin_client.get(change_url(schedule)))
    data.update(
        every="2",
        period="hours",
        studies=["wave-2"],
        encoder="all-MiniLM-L6-v2",
        recipe="seed",
        epochs="3",
        paraphrases="0",
        include_synthetic="on",
        min_new_rankings="7",
        promotion="auto",
        group_fields=["age_band"],
        group_margin="0.05",
    )
    assert admin_client.post(change_url(schedule), data).status_code == 302
    schedule.refresh_from_db()
    kwargs = json.loads(schedule.kwargs)
    expected = ScheduleSettings(
        studies=("wave-2",),
        encoder="all-MiniLM-L6-v2",
        recipe="seed",
        epochs=3,
        paraphrases=0,
        include_synthetic=True,
        min_new_rankings=7,
        promotion="auto",
        group_fields=("age_band",),
        group_margin=0.05,
    )
    assert ScheduleSettings.from_kwargs(kwargs) == expected
    assert kwargs == json.loads(json.dumps(asdict(expected)))
    assert (schedule.interval.every, schedule.interval.period) == (2, "hours")
    assert schedule.task == TASK_NAME
    # the beat task takes exactly these kwargs: its decision names the edited threshold
    scheduled_retrain.apply(kwargs=kwargs, headers={"periodic_task_name": schedule.name})
    decision = RetrainDecision.objects.get(schedule=schedule.name)
    assert (decision.decision, decision.reason) == ("skip", "only 0 new rankings, need 7")
    # and the Schedules dashboard shows them as fields
    page = admin_client.get(reverse("dashboards:schedules")).content.decode()
    for shown in ("every 2 hours", "7 new rankings", "wave-2", "all-MiniLM-L6-v2", "age_band"):
        assert shown in page, shown
    assert "auto: promoted when" in page and "{" not in strip_tags(page.split("<h1>")[1])
    assert "seed: the model card&#x27;s (lr 1e-5)" in page


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"min_new_rankings": "0"}, "Ensure this value is greater than or equal to 1."),
        ({"epochs": "many"}, "Enter a whole number."),
        ({"group_margin": "1.5"}, "group_margin must be from 0 up to 1"),
        ({"promotion": "sometimes"}, "Select a valid choice. sometimes is not one of"),
        ({"recipe": "fancy"}, "fancy is not a recipe: choose one of standard, seed."),
        ({"studies": ["val"]}, "Select a valid choice. val is not one of"),
        ({"group_fields": ["shoe_size"]}, "Select a valid choice. shoe_size is not one of"),
        ({"every": "0"}, "Ensure this value is greater than or equal to 1."),
    ],
)
def test_a_bad_value_is_a_clear_message_and_nothing_is_saved(
    admin_client, schedule, change, message
):
    before = (schedule.kwargs, schedule.interval_id, IntervalSchedule.objects.count())
    data = {**form_data(admin_client.get(change_url(schedule))), **change}
    response = admin_client.post(change_url(schedule), data)
    assert response.status_code == 200
    assert message in unescape(response.content.decode())
    schedule.refresh_from_db()
    assert (schedule.kwargs, schedule.interval_id, IntervalSchedule.objects.count()) == before


def test_unusable_stored_settings_are_named_on_the_form_and_the_dashboard(admin_client, schedule):
    schedule.kwargs = json.dumps({"min_new_rankings": 10, "promotion": "sometimes"})
    schedule.save()
    html = unescape(admin_client.get(change_url(schedule)).content.decode())
    assert "The stored settings are unusable (promotion must be one of manual, auto" in html
    page = unescape(admin_client.get(reverse("dashboards:schedules")).content.decode())
    assert "Its settings are unusable, so each step skips: promotion must be one of" in page


def test_the_recipe_is_a_choice_and_an_unknown_stored_one_is_named(admin_client, schedule):
    response = admin_client.get(change_url(schedule))
    field = response.context["adminform"].form.fields["recipe"]
    assert [value for value, _ in field.choices] == ["", "standard", "seed"]
    page = admin_client.get(reverse("dashboards:schedules")).content.decode()
    assert "the default (standard: the card" in unescape(page)
    schedule.kwargs = json.dumps({"recipe": "fancy"})
    schedule.save()
    html = unescape(admin_client.get(change_url(schedule)).content.decode())
    assert "The stored settings are unusable (recipe must be one of standard, seed" in html
    page = unescape(admin_client.get(reverse("dashboards:schedules")).content.decode())
    assert "unusable, so each step skips: recipe must be one of standard, seed" in page


def test_a_schedule_added_with_the_task_named_gets_the_fields(admin_client, schedule):
    add = reverse("admin:django_celery_beat_periodictask_add") + f"?task={TASK_NAME}"
    data = form_data(admin_client.get(add))
    data.update(name="Nightly wave 2", every="1", period="days", studies=["wave-2"])
    assert admin_client.post(add, data).status_code == 302
    task = PeriodicTask.objects.get(name="Nightly wave 2")
    assert task.task == TASK_NAME and (task.interval.every, task.interval.period) == (1, "days")
    assert ScheduleSettings.from_kwargs(json.loads(task.kwargs)).studies == ("wave-2",)


def test_another_periodic_task_keeps_the_packages_form(admin_client, schedule):
    other = PeriodicTask.objects.create(
        name="cleanup", task="celery.backend_cleanup", interval=schedule.interval
    )
    html = admin_client.get(change_url(other)).content.decode()
    assert 'name="kwargs"' in html and 'name="min_new_rankings"' not in html


def test_the_study_slug_help_text_reads_as_text(admin_client, db):
    study = studies.default_study()
    url = reverse("admin:annotation_study_change", args=[study.pk])
    html = admin_client.get(url).content.decode()
    found = re.search(r'<div class="help" id="id_slug_helptext">(.*?)</div>\s*</div>', html, re.S)
    assert found, "the slug's help text is not on the page"
    assert unescape(strip_tags(found.group(1))).strip() == "The entry link is /join/{this slug}/."


def _help_texts(model_admin, request, obj=None) -> list[tuple[str, str]]:
    form = model_admin.get_form(request, obj)
    texts = [(name, str(f.help_text)) for name, f in form.base_fields.items()]
    for title, options in model_admin.get_fieldsets(request, obj):
        texts.append((f"fieldset {title}", str(options.get("description", ""))))
    return texts


def test_no_help_text_of_our_admin_pages_is_swallowed_as_html(admin_user, schedule):
    """The admin shows help texts and fieldset descriptions as HTML, so a ``<slug>`` in
    one would vanish: none of ours (every model admin of our apps, the schedule form)
    holds anything that reads as a tag."""
    request = RequestFactory().get("/", {"task": TASK_NAME})
    request.user = admin_user
    texts = []
    for model, model_admin in admin.site._registry.items():
        if model._meta.app_label in OUR_APPS:
            texts += [(model.__name__, *t) for t in _help_texts(model_admin, request)]
    beat_admin = admin.site._registry[PeriodicTask]
    texts += [("schedule", *t) for t in _help_texts(beat_admin, request, schedule)]
    texts += [("schedule", "unusable", schedule_fieldsets("a <b> & c")[2][1]["description"])]
    assert len(texts) > 50
    tag = re.compile(r"<[^>]*>")
    assert not [t for t in texts if tag.search(t[2])], [t for t in texts if tag.search(t[2])]
