"""A study's content per language (issue 39): consent texts and instructions published per
language and versioned per language, the demographic questions' translations, a study
that cannot open while a language lacks any of them (one line per language), a
participant who reads and agrees to the version in their language, and the whole path
from the commands as written (create_study, consent, instructions, study_status) to a
Dutch and an Arabic participant and the export."""

from __future__ import annotations

import io
import json

import pytest
from crowd_fakes import FakeProlific, join
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from annotation.catalogue.loading import load_catalogue
from annotation.models import Consent, ConsentText, DemographicField, Instructions, Study
from annotation.participants import consent, content, services
from annotation.rankings import selectors

FACTS = {
    "controller": "Universiteit Utrecht, Faculteit Bètawetenschappen",
    "dpo_contact": "privacy@uu.example",
    "retention": "tot 31 december 2031",
    "complaint": "Autoriteit Persoonsgegevens, Postbus 93374, 2509 AJ Den Haag",
    "ethics_reference": "FETC Bèta, goedkeuring 24-1234",
}
TEXTS = {
    "en": {
        **FACTS,
        "contact_email": "stereotypes@uu.example",
        "legal_basis": "explicit_consent",
        "text": "You are invited to rank images of people at work.",
    },
    "nl": {**FACTS, "text": "U wordt uitgenodigd afbeeldingen van mensen aan het werk te ordenen."},
    "ar": {**FACTS, "text": "أنت مدعو لترتيب صور أشخاص في العمل."},
}
INSTRUCTIONS = {
    "en": "Put the image that shows the most varied people first.",
    "nl": "Zet de afbeelding met de meest uiteenlopende mensen bovenaan.",
    "ar": "ضع الصورة التي تُظهر أكثر الناس تنوعًا في الأعلى.",
}


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@pytest.fixture
def catalogue(db):
    load_catalogue()


def _files(tmp_path, language: str) -> tuple[str, str]:
    facts, words = tmp_path / f"consent-{language}.json", tmp_path / f"instructions-{language}.txt"
    facts.write_text(json.dumps(TEXTS[language]), encoding="utf-8")
    words.write_text(INSTRUCTIONS[language], encoding="utf-8")
    return str(facts), str(words)


def _study(slug: str = "wave", languages: str = "nl,en,ar") -> Study:
    run("create_study", slug, "--platform", "prolific", "--completion-code", "C0MPL3T3",
        "--screen-out-code", "SCR33N", "--languages", languages)  # fmt: skip
    return Study.objects.get(slug=slug)


def test_the_commands_refuse_a_language_the_study_does_not_offer(catalogue, tmp_path):
    study = _study(languages="nl,en")
    facts, words = _files(tmp_path, "ar")
    before = (ConsentText.objects.count(), Instructions.objects.count())
    for command, path in (("consent", facts), ("instructions", words)):
        with pytest.raises(CommandError) as refused:
            run(command, "--study", study.slug, "--language", "ar", "--file", path)
        assert str(refused.value) == (
            "Study 'wave' does not offer 'ar'; its languages are nl, en "
            "(create_study --languages, or the staff API)."
        )
    assert (ConsentText.objects.count(), Instructions.objects.count()) == before
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n")
    with pytest.raises(CommandError, match="^The instructions are empty.$"):
        run("instructions", "--study", study.slug, "--language", "nl", "--file", str(empty))


def test_versions_count_per_language_and_a_new_language_starts_from_the_neutral_facts(
    catalogue, tmp_path
):
    study = _study(languages="en,nl")
    run("consent", "--study", study.slug, "--language", "en", "--file", _files(tmp_path, "en")[0])
    out = run("consent", "--study", study.slug, "--language", "nl", "--file",
              _files(tmp_path, "nl")[0])  # fmt: skip
    assert "consent version 1 (nl), published" in out
    dutch = ConsentText.objects.get(study=study, language="nl")
    # e-mail and legal basis read the same in every language: carried from the English
    assert (dutch.contact_email, dutch.legal_basis) == (
        "stereotypes@uu.example",
        "explicit_consent",
    )
    assert dutch.text == TEXTS["nl"]["text"] and consent.missing_fields(dutch) == []
    english = ConsentText.objects.filter(study=study, language="en").first()
    assert english.version == 2  # the template was 1
    again = run("consent", "--study", study.slug, "--language", "nl", "--file",
                _files(tmp_path, "nl")[0])  # fmt: skip
    assert "consent version 1 (nl), unchanged" in again

    path = _files(tmp_path, "nl")[1]
    assert "instructions version 1 (nl), published" in run(
        "instructions", "--study", study.slug, "--language", "nl", "--file", path
    )
    assert "unchanged" in run("instructions", "--study", study.slug, "--language", "nl",
                              "--file", path)  # fmt: skip
    assert content.instructions(study, "nl").text == INSTRUCTIONS["nl"]
    assert content.instructions(study, "ar").text == content.instructions(study, "en").text


def test_a_study_cannot_open_while_a_language_lacks_its_content(catalogue, tmp_path):
    study = _study()
    with pytest.raises(CommandError) as refused:
        run("study_status", study.slug, "open")
    lines = str(refused.value).splitlines()
    assert [line.split(": ", 1)[0] for line in lines] == ["Study 'wave' cannot open"] * 3
    nl, en, ar = lines
    assert "no consent text in nl (manage.py consent --study wave --language nl" in nl
    assert "no instructions in nl (manage.py instructions --study wave --language nl" in nl
    assert "translation" not in nl  # the catalogue ships Dutch and Arabic fields
    assert "its consent text in en (version 1) lacks controller" in en
    assert "instructions" not in en  # English rests on the catalogue's
    for language in ("en", "nl", "ar"):  # English first: its e-mail and basis carry over
        facts, words = _files(tmp_path, language)
        run("consent", "--study", study.slug, "--language", language, "--file", facts)
        if language != "en":
            run("instructions", "--study", study.slug, "--language", language, "--file", words)
    # a question without its Arabic choice is named, and holds the study back
    field = DemographicField.objects.get(key="disability")
    del field.translations["ar"]["choices"]["no"]
    field.save()
    assert field.untranslated("ar") == ["'no'"] and field.untranslated("en") == []
    with pytest.raises(CommandError) as refused:
        run("study_status", study.slug, "open")
    assert str(refused.value) == (
        "Study 'wave' cannot open: no ar translation of the field disability ('no'; Admin > "
        "Demographic fields, or manage.py load_catalogue for the shipped languages)."
    )
    load_catalogue()  # puts the shipped translation back
    assert "open" in run("study_status", study.slug, "open")
    assert Study.objects.get(pk=study.pk).status == Study.Status.OPEN


def test_a_participant_agrees_to_the_version_in_their_language(catalogue, tmp_path, make_tasks):
    study = _study(languages="en,nl")
    for language in ("en", "nl"):
        facts, words = _files(tmp_path, language)
        run("consent", "--study", study.slug, "--language", language, "--file", facts)
        run("instructions", "--study", study.slug, "--language", language, "--file", words)
    run("study_status", study.slug, "open")
    make_tasks(1, 3, study=study)
    link = FakeProlific(study.slug).link(FakeProlific.new_participant_id())
    dutch = Client(HTTP_ACCEPT_LANGUAGE="nl")
    page = dutch.get(link).content.decode()
    assert TEXTS["nl"]["text"] in page and TEXTS["en"]["text"] not in page
    assert join(dutch, link).status_code == 302
    agreed = Consent.objects.get()
    assert (agreed.text.language, agreed.text.version) == ("nl", 1)
    assert INSTRUCTIONS["nl"] in dutch.get(reverse("portal:instructions")).content.decode()
    profile = agreed.annotator
    # a new English version asks the English readers, not those who agreed in Dutch
    changed = {**TEXTS["en"], "text": TEXTS["en"]["text"] + " Now with audio."}
    consent.publish(study, changed, language="en")
    assert selectors.has_consent(profile)
    # switching language keeps the consent given
    dutch.get(reverse("portal:home") + "?lang=en")
    assert selectors.has_consent(profile)
    consent.publish(study, {"text": TEXTS["nl"]["text"] + " Nu met geluid."}, language="nl")
    assert not selectors.has_consent(profile)
    assert dutch.get(reverse("portal:rank")).url == reverse("portal:consent")
    dutch.post(reverse("portal:consent") + "?lang=nl", {"action": "agree"})
    assert profile.consents.active().get().text.version == 2
    assert selectors.has_consent(profile)


def test_the_demographic_questions_read_in_the_participant_language(catalogue, make_tasks):
    study = Study.objects.create(
        slug="vragen", name="Vragen", platform=Study.Platform.PROLIFIC,
        completion_code="C", screen_out_code="S", languages=["nl", "en"],
    )  # fmt: skip
    make_tasks(1, 3, study=study)
    link = FakeProlific(study.slug).link(FakeProlific.new_participant_id())
    dutch = Client(HTTP_ACCEPT_LANGUAGE="nl")
    join(dutch, link)
    page = dutch.get(reverse("portal:demographics")).content.decode()
    assert "Genderidentiteit" in page and ">vrouw</option>" in page
    assert 'value="woman"' in page  # the value posted stays the canonical choice
    assert "Gender identity" not in page and ">woman<" not in page
    dutch.post(reverse("portal:demographics"), {"gender_identity": "woman"})
    profile = services.get_profile(Consent.objects.get().annotator.user)
    assert profile.demographics["gender_identity"] == "woman"


def test_the_refusals_of_a_bad_translation(db):
    field = DemographicField(key="k", label="Q", choices=["a"], translations={"nl": "x"})
    with pytest.raises(Exception, match="nl: an object of label, help_text and choices"):
        field.full_clean()
    field.translations = {"nl": {"choices": {"b": "B"}}}
    with pytest.raises(Exception, match="nl: no such choice 'b'"):
        field.full_clean()


def test_the_done_when_path(catalogue, tmp_path, make_tasks):
    """Issue 39's "done when", through the commands as a lab types them."""
    study = _study(slug="three")
    for language in ("en", "nl", "ar"):  # English first: its e-mail and basis carry over
        facts, words = _files(tmp_path, language)
        run("consent", "--study", "three", "--language", language, "--file", facts)
        run("instructions", "--study", "three", "--language", language, "--file", words)
    assert "open" in run("study_status", "three", "open")
    make_tasks(2, 3, study=study)
    prolific = FakeProlific("three")
    dutch = Client(HTTP_ACCEPT_LANGUAGE="nl-NL,nl;q=0.9")
    link = prolific.link(prolific.new_participant_id())
    first = dutch.get(link).content.decode()
    assert '<html lang="nl" dir="ltr">' in first and TEXTS["nl"]["text"] in first
    join(dutch, link)
    for name in ("home", "instructions", "demographics", "rank"):
        page = dutch.get(reverse(f"portal:{name}"))
        assert page["Content-Language"] == "nl", name
    assignment = dutch.get(reverse("portal:rank")).context["assignment"]
    order = ",".join(map(str, assignment.shown_order))
    dutch.post(reverse("portal:rank"), {"task_id": assignment.task_id, "order": order})

    arabic = Client()
    link = prolific.link(prolific.new_participant_id()) + "&lang=ar"
    page = arabic.get(link).content.decode()
    assert '<html lang="ar" dir="rtl">' in page and TEXTS["ar"]["text"] in page
    join(arabic, link)
    assert INSTRUCTIONS["ar"] in arabic.get(reverse("portal:instructions")).content.decode()
    assert {c.text.language for c in Consent.objects.all()} == {"nl", "ar"}

    out = tmp_path / "rankings.jsonl"
    call_command("export_rankings", "--study", "three", "--out", str(out), stderr=io.StringIO())
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [row["portal_language"] for row in rows] == ["nl"]


@pytest.mark.django_db(transaction=True)
def test_the_migration_gives_existing_content_its_study_default_language():
    """Texts and instructions written before languages are in the language every
    participant was shown them in: their study's default."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    before = [("annotation", "0021_languages")]
    after = executor.loader.graph.leaf_nodes()
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    studies = old.get_model("annotation", "Study").objects
    dutch = studies.create(slug="nl-first", name="NL", platform="generic", languages=["nl", "en"])
    english = studies.create(slug="en-only", name="EN", platform="generic", languages=["en"])
    for study in (dutch, english):
        old.get_model("annotation", "ConsentText").objects.create(study=study, version=1, text="t")
        old.get_model("annotation", "Instructions").objects.create(study=study, version=1, text="i")
    MigrationExecutor(connection).migrate(after)
    for slug, language in (("nl-first", "nl"), ("en-only", "en")):
        assert ConsentText.objects.get(study__slug=slug).language == language
        assert Instructions.objects.get(study__slug=slug).language == language
