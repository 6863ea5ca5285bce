"""Two studies side by side for the who-sees-what tests (issue 30): study A ("alpha") and
study B ("bravo"), each with a handful of every kind of row a staff surface shows, and
every text of B's holding "bravo" (A's "alpha"), so a body that leaks B says so.

``build()`` makes both in a few dozen queries (ORM rows; no model, no worker). Each side
keeps its rows by model (``Side.rows``) for the admin's generic walk, and its people:
A's researcher (no demographics permission), A's researcher with it, B's owner.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.utils import timezone
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from annotation.access import log
from annotation.access.models import AccessLogEntry, StudyMembership
from annotation.models import (
    Assignment,
    Consent,
    ConsentText,
    DemographicField,
    Instructions,
    Item,
    Occupation,
    Participation,
    Prompt,
    PromptType,
    Ranking,
    RankingTask,
    StatusChange,
    Study,
    TaskItem,
)
from annotation.participants import services
from annotation.rankings.exports import pseudonym
from training.models import (
    Augmentation,
    Checkpoint,
    DatasetSnapshot,
    EncoderGate,
    Evaluation,
    LearningCurve,
    Paraphrase,
    RegistryEvent,
    RetrainDecision,
    TrainingRun,
)
from training.schedule_settings import TASK_NAME

FIELD = "origin_town"  # a free-text demographic question: every answer is one person's


@dataclass
class Side:
    """One study's rows: ``rows`` by model (the admin walk), named ones as attributes."""

    word: str
    study: Study
    validation: Study
    rows: dict = field(default_factory=dict)

    def __getattr__(self, name):
        try:
            return self.__dict__["named"][name]
        except KeyError:
            raise AttributeError(name) from None

    @property
    def answer(self) -> str:
        """The secret demographic answer of the side's annotator."""
        return f"{self.word}-secret-answer"


def _keep(side: Side, **named) -> None:
    side.__dict__.setdefault("named", {}).update(named)
    for row in named.values():
        side.rows.setdefault(type(row), row)


def _staff(name: str):
    return get_user_model().objects.create_user(name, password="pw-123456", is_staff=True)


def _side(word: str, version: int) -> Side:
    study = Study.objects.create(slug=word, name=f"{word} study", platform="generic")
    validation = Study.objects.create(
        slug=f"{word}-val", name=f"{word} validation", platform="generic", kind="validation"
    )
    side = Side(word, study, validation)
    occupation = Occupation.objects.create(name=f"{word} occupation", slug=f"{word}-occ")
    prompt = Prompt.objects.create(
        occupation=occupation, prompt_type=PromptType.NEUTRAL, text=f"a {word} prompt"
    )
    items = [
        Item.objects.create(
            study=study, prompt=prompt, image=f"items/{word}-{i}.png", image_sha256=f"{word}{i}"
        )
        for i in range(3)
    ]
    task = RankingTask.objects.create(study=study, occupation=occupation, overlap=2)
    for item in items:
        TaskItem.objects.create(task=task, item=item)
    consent_text = ConsentText.objects.create(study=study, version=1, text=f"{word} consent")
    instructions = Instructions.objects.create(study=study, version=1, text=f"{word} steps")
    user = get_user_model().objects.create_user(f"{word}-annotator", password="pw-123456")
    profile = services.get_profile(user, study=study)
    services.give_consent(profile)
    services.save_demographics(profile, {FIELD: side.answer})
    order = [i.pk for i in items]
    Assignment.objects.create(
        task=task,
        annotator=profile,
        shown_order=order,
        reserved_until=timezone.now() + timedelta(minutes=5),
    )
    ranking, _ = services.submit_ranking(profile, task.pk, order[::-1], 12.0)
    other = services.get_profile(
        get_user_model().objects.create_user(f"{word}-second", password="pw-123456"), study=study
    )
    assignment = Assignment.objects.create(
        task=task,
        annotator=other,
        shown_order=order,
        reserved_until=timezone.now() + timedelta(minutes=5),
    )
    participation = Participation.objects.create(
        study=study, annotator=profile, external_id_hash=f"{word}hash".ljust(64, "0")
    )
    change = StatusChange.objects.create(
        annotator=profile, previous="ok", status="warned", reason=f"{word} reason"
    )
    snapshot = DatasetSnapshot.objects.create(
        ranking_count=1,
        last_ranking_id=ranking.pk,
        content_hash=f"{word}hash",
        example_count=0,
        train_count=0,
        eval_count=0,
        examples=[],
    )
    snapshot.studies.add(study)
    augmentation = Augmentation.objects.create(
        snapshot=snapshot, backend=f"{word}-backend", min_cosine=0.5
    )
    paraphrase = Paraphrase.objects.create(
        augmentation=augmentation, origin_key=f"{word}-key", text=f"{word} words", backend="x"
    )
    run = TrainingRun.objects.create(
        snapshot=snapshot, encoder=f"{word}-encoder", hyperparameters={}, epochs=1, error=word
    )
    checkpoint = Checkpoint.objects.create(
        version=version,
        run=run,
        path=f"/nonexistent/{word}",
        head_sha256="0" * 64,
        encoder_name=f"{word}-encoder",
        encoder_identity={"name": f"{word}-encoder"},
        snapshot=snapshot,
        threshold=0.1,
        metrics={"spearman": 0.5, "per_occupation": {f"{word} occupation": 0.5}},
    )
    evaluation = Evaluation.objects.create(
        checkpoint=checkpoint, snapshot=snapshot, metrics={"note": word}, predictions={}
    )
    gate = EncoderGate.objects.create(
        checkpoint=checkpoint,
        snapshot=snapshot,
        backend="onnx",
        quantization="int8",
        encoder_key=word[:16],
        encoder_identity={"name": word},
        metrics={"rho_drift": 0.001, "flips": 0, "flip_share": 0.0, "flip_upper": 0.0075, "n": 10},
        passed=True,
    )
    curve = LearningCurve.objects.create(snapshot=snapshot, encoder=f"{word}-encoder")
    event = RegistryEvent.objects.create(
        action="promote", checkpoint=checkpoint, actor=f"{word}-actor", reason=word
    )
    every, _ = IntervalSchedule.objects.get_or_create(every=1, period="days")
    schedule = PeriodicTask.objects.create(
        name=f"{word} schedule",
        task=TASK_NAME,
        interval=every,
        kwargs=json.dumps({"studies": [study.slug]}),
    )
    decision = RetrainDecision.objects.create(
        schedule=schedule.name, decision="skip", reason=f"{word} decision", snapshot=snapshot
    )
    owner = _staff(f"{word}-owner")
    membership = StudyMembership.objects.create(user=owner, study=study, role="owner")
    entry = log.record(owner, study, log.Surface.API, log.Action.EXPORT, f"{word} export")
    _keep(
        side,
        occupation=occupation,
        prompt=prompt,
        item=items[0],
        task=task,
        task_item=TaskItem.objects.filter(task=task).first(),
        consent_text=consent_text,
        consent=Consent.objects.filter(annotator=profile).first(),
        instructions=instructions,
        user=user,
        profile=profile,
        ranking=Ranking.objects.get(pk=ranking.pk),
        assignment=assignment,
        participation=participation,
        status_change=change,
        snapshot=snapshot,
        augmentation=augmentation,
        paraphrase=paraphrase,
        run=run,
        checkpoint=checkpoint,
        evaluation=evaluation,
        gate=gate,
        curve=curve,
        event=event,
        schedule=schedule,
        decision=decision,
        owner=owner,
        membership=membership,
        entry=entry,
    )
    side.rows[Study] = study
    side.rows[get_user_model()] = user
    side.rows[AccessLogEntry] = entry
    side.pseudonym = pseudonym(user.pk)
    return side


@dataclass
class World:
    a: Side
    b: Side
    researcher: object  # A's researcher, without the demographics permission
    demographer: object  # A's researcher with it


def build() -> World:
    """Study A and study B, and A's two researchers."""
    DemographicField.objects.get_or_create(
        key=FIELD, defaults={"label": "Town of origin", "allow_other": True}
    )
    a, b = _side("alpha", 101), _side("bravo", 202)
    researcher, demographer = _staff("alpha-researcher"), _staff("alpha-demographer")
    for study in (a.study, a.validation):
        StudyMembership.objects.create(user=researcher, study=study, role="researcher")
        StudyMembership.objects.create(
            user=demographer, study=study, role="researcher", demographics=True
        )
    return World(a, b, researcher, demographer)
