"""Studies as a unit: the default study that existing data migrates into, and the
commands that work on the default study unless given another."""

import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from annotation.catalogue import loading as catalogue
from annotation.errors import StudyNotFound
from annotation.models import (
    AnnotatorProfile,
    ConsentText,
    Instructions,
    Item,
    RankingTask,
    Study,
)
from annotation.models.studies import DEFAULT_STUDY_SLUG
from annotation.studies import lifecycle as studies

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=out)
    return out.getvalue()


@pytest.fixture
def small_catalogue(tmp_path, media_root):
    """The real catalogue cut to its first three occupations (fast placeholders)."""
    data = catalogue.read_catalogue()
    data["occupations"] = data["occupations"][:3]
    path = tmp_path / "catalogue.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_the_default_study_is_a_collection_study_that_is_open():
    study = studies.default_study()
    assert study.slug == DEFAULT_STUDY_SLUG
    assert study.kind == Study.Kind.COLLECTION and study.makes_labels
    assert study.status == Study.Status.OPEN and study.is_open
    assert studies.resolve(None) == study == studies.resolve(DEFAULT_STUDY_SLUG)
    with pytest.raises(StudyNotFound, match="no study 'nope'"):
        studies.resolve("nope")


def test_rows_made_without_a_study_belong_to_the_default_one(make_tasks, annotator):
    task = make_tasks(1, 2)[0]
    profile = annotator("ann").profile
    default = studies.default_study()
    assert task.study == default
    assert {i.study for i in task.items.all()} == {default}
    assert profile.study == default
    assert {c.text.study for c in profile.consents.all()} == {default}


def test_task_size_and_overlap_fall_back_to_the_settings(settings):
    study = Study.objects.create(slug="s", name="S", platform=Study.Platform.GENERIC)
    assert studies.task_size(study) == settings.STEREORANK["TASK_SIZE"]
    assert studies.overlap(study) == settings.STEREORANK["TASK_OVERLAP"]
    study.task_size, study.overlap = 4, 2
    assert (studies.task_size(study), studies.overlap(study)) == (4, 2)


def test_each_study_keeps_its_own_items_tasks_consent_and_instructions(small_catalogue, settings):
    other = Study.objects.create(
        slug="other", name="Other", platform=Study.Platform.GENERIC, task_size=3
    )
    catalogue.load_catalogue(1, small_catalogue)
    catalogue.load_catalogue(1, small_catalogue, study=other)
    # The same placeholder images, once in each study (hashes are unique per study).
    default = studies.default_study()
    assert Item.objects.filter(study=default).count() == 9
    assert Item.objects.filter(study=other).count() == 9
    assert ConsentText.objects.filter(study=other).count() == 1
    assert Instructions.objects.filter(study=other).count() == 1

    run("build_tasks", "--size", "3")
    assert RankingTask.objects.filter(study=other).count() == 0
    made = run("build_tasks", "--study", "other", "--gold-per-occupation", "2")
    assert made.startswith("3 tasks built")
    for task in RankingTask.objects.filter(study=other):
        assert {i.study_id for i in task.items.all()} == {other.pk}
        assert task.items.count() == 3  # the study's own task size
    for task in RankingTask.objects.filter(study=default):
        assert {i.study_id for i in task.items.all()} == {default.pk}
    # Gold tasks are on by default (one per occupation); the other study's flag is its own.
    assert RankingTask.objects.filter(study=other, is_gold=True).count() == 6
    assert RankingTask.objects.filter(study=default, is_gold=True).count() == 3
    other.refresh_from_db()
    assert other.gold_per_occupation == 2 and studies.default_study().gold_per_occupation == 1


def test_commands_refuse_an_unknown_study_in_one_line():
    for command in ("build_tasks", "load_catalogue", "simulate_annotators"):
        with pytest.raises(CommandError, match="^There is no study 'nope'.$"):
            run(command, "--study", "nope")
    with pytest.raises(CommandError, match="no study 'nope'"):
        run("import_items", "somewhere", "--study", "nope")


def test_synthetic_annotators_join_the_study_they_are_made_for(small_catalogue):
    other = Study.objects.create(slug="other", name="Other", platform=Study.Platform.GENERIC)
    catalogue.load_catalogue(1, small_catalogue, study=other)
    run("build_tasks", "--study", "other", "--size", "3")
    run("simulate_annotators", "--study", "other", "--count", "2", "--tasks-per-annotator", "1")
    made = AnnotatorProfile.objects.filter(is_synthetic=True)
    assert {p.study_id for p in made} == {other.pk}
    assert all(p.user.username.startswith("synthetic-other-") for p in made)


@pytest.mark.django_db(transaction=True)
def test_the_migration_puts_existing_data_into_one_default_study(media_root):
    """Rows made before studies owned anything land in the default study; a link study's
    ``active`` becomes its status."""
    executor = MigrationExecutor(connection)
    first = executor.loader.graph.node_map[("annotation", "0009_study_unit_fields")]
    before = sorted(parent.key for parent in first.parents)
    after = executor.loader.graph.leaf_nodes()
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    occupations = old.get_model("annotation", "Occupation").objects
    occupation = occupations.create(name="nurse", slug="nurse")
    prompt = old.get_model("annotation", "Prompt").objects.create(
        occupation=occupation, prompt_type="neutral", text="A nurse"
    )
    item = old.get_model("annotation", "Item").objects.create(
        prompt=prompt, image="items/x.png", image_sha256="x"
    )
    task = old.get_model("annotation", "RankingTask").objects.create(occupation=occupation)
    old.get_model("annotation", "TaskItem").objects.create(task=task, item=item)
    text = old.get_model("annotation", "ConsentText").objects.create(version=1, text="consent")
    old.get_model("annotation", "Instructions").objects.create(version=1, text="do this")
    user = old.get_model("auth", "User").objects.create(username="ann")
    profile = old.get_model("annotation", "AnnotatorProfile").objects.create(user=user)
    old.get_model("annotation", "Consent").objects.create(annotator=profile, text=text)
    old_study = old.get_model("annotation", "Study")
    old_study.objects.create(slug="closed-one", name="Closed", platform="generic", active=False)
    old_study.objects.create(slug="open-one", name="Open", platform="prolific", active=True)

    executor = MigrationExecutor(connection)
    executor.migrate(after)

    default = Study.objects.get(slug=DEFAULT_STUDY_SLUG)
    assert (default.kind, default.status) == (Study.Kind.COLLECTION, Study.Status.OPEN)
    assert Item.objects.get().study == default
    assert RankingTask.objects.get().study == default
    assert ConsentText.objects.get().study == default
    assert Instructions.objects.get().study == default
    assert AnnotatorProfile.objects.get().study == default
    assert Study.objects.get(slug="closed-one").status == Study.Status.CLOSED
    assert Study.objects.get(slug="open-one").status == Study.Status.OPEN
