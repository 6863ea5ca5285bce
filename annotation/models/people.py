"""People: annotators and their status, the demographic questions, consent texts (structured
as an ethics board reads them) and consents, instructions, status changes."""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from annotation.models.studies import study_field
from annotation.stats.records import PREFER_NOT_TO_SAY
from core.languages import SOURCE as SOURCE_LANGUAGE


def translations_refusal(translations, choices: list) -> str | None:
    """Why ``translations`` is not a field's translations (None when it is): an object
    keyed by language code, each with text ``label`` and ``help_text`` and a ``choices``
    object whose keys are the field's choices."""
    if not isinstance(translations, dict):
        return 'An object keyed by language code, e.g. {"nl": {"label": "Leeftijd"}}.'
    for code, entry in translations.items():
        if not isinstance(entry, dict) or set(entry) - {"label", "help_text", "choices"}:
            return f"{code}: an object of label, help_text and choices."
        if any(not isinstance(entry.get(k, ""), str) for k in ("label", "help_text")):
            return f"{code}: label and help_text are text."
        given = entry.get("choices", {})
        if not isinstance(given, dict) or not all(isinstance(v, str) for v in given.values()):
            return f"{code}: choices maps each choice to its text."
        if unknown := set(given) - set(choices):
            return f"{code}: no such choice {', '.join(sorted(map(repr, unknown)))}."
    return None


class DemographicField(models.Model):
    """One question of the demographics form; admins add fields without code.

    ``choices`` is a list of strings; empty means free text. With ``allow_other``
    a field with choices also takes an answer in the annotator's own words.
    "Prefer not to say" is always offered and every field is optional.
    """

    key = models.SlugField(max_length=50, unique=True)
    label = models.CharField(max_length=200)
    help_text = models.CharField(max_length=300, blank=True)
    choices = models.JSONField(default=list, blank=True)
    allow_other = models.BooleanField(
        default=False, help_text="Besides the choices, offer 'other' in the annotator's own words."
    )
    order = models.PositiveSmallIntegerField(default=0)
    active = models.BooleanField(default=True)
    translations = models.JSONField(
        default=dict,
        blank=True,
        help_text='Per language code: {"label": ..., "help_text": ..., "choices": {choice: '
        "its translation}}. The stored answer stays the choice itself, so groups do not "
        "split by language.",
    )

    PREFER_NOT_TO_SAY = PREFER_NOT_TO_SAY  # quality.records: the answer that forms no group
    OTHER = (
        "other"  # the group of answers in the annotator's own words (annotation.assignment.quotas)
    )

    class Meta:
        ordering = ["order", "key"]

    def __str__(self) -> str:
        return self.label

    def clean(self) -> None:
        if not isinstance(self.choices, list) or not all(isinstance(c, str) for c in self.choices):
            raise ValidationError({"choices": "Choices must be a list of strings."})
        if any(c.strip().lower() == self.PREFER_NOT_TO_SAY for c in self.choices):
            raise ValidationError({"choices": f"'{self.PREFER_NOT_TO_SAY}' is always offered."})
        if len({c.strip().lower() for c in self.choices}) != len(self.choices):
            raise ValidationError({"choices": "Each choice may appear only once."})
        if self.allow_other and not self.choices:
            raise ValidationError({"allow_other": "A field without choices is free text already."})
        if problem := translations_refusal(self.translations, self.choices):
            raise ValidationError({"translations": problem})

    def untranslated(self, language: str) -> list[str]:
        """What of this field ``language`` lacks a translation of (its label, help text,
        choices), in that order; nothing for English, the source."""
        if language == SOURCE_LANGUAGE:
            return []
        mine = self.translations.get(language) or {}
        choices = mine.get("choices") or {}
        wanted = [(n, getattr(self, n), mine.get(n)) for n in ("label", "help_text")]
        wanted += [(repr(c), c, choices.get(c)) for c in self.choices]
        return [name for name, source, text in wanted if source and not (text or "").strip()]

    def translated(self, language: str | None) -> tuple[str, str, dict[str, str]]:
        """(label, help text, choice -> its text) in ``language``, the English for what
        it lacks (all of it for None or English)."""
        mine = {} if language in (None, SOURCE_LANGUAGE) else self.translations.get(language) or {}
        choices = mine.get("choices") or {}
        return (
            mine.get("label") or self.label,
            mine.get("help_text") or self.help_text,
            {c: choices.get(c) or c for c in self.choices},
        )

    def quota_values(self) -> set[str] | None:
        """The values a group quota of this field may name; None when any answer may
        (free text). See ``annotation.assignment.quotas``."""
        if not self.choices:
            return None
        return {*self.choices, self.PREFER_NOT_TO_SAY, self.OTHER}


class ConsentText(models.Model):
    """A version of a study's consent text in one of its languages; versions count per
    language, and the newest in the language a participant reads is the one they agree to.

    Structured as an ethics board reads it: who is responsible (``controller``), whom to
    ask (``contact_email``, ``dpo_contact``), on what ground special-category data such as
    religion is processed (``legal_basis``), for how long it is kept (``retention``), where
    to complain (``complaint``), the approval (``ethics_reference``), and the free text
    (``text``). A study whose newest text lacks one of ``REQUIRED`` cannot be opened
    (``annotation.participants.consent.missing_fields``).
    """

    class LegalBasis(models.TextChoices):
        EXPLICIT_CONSENT = (
            "explicit_consent",
            "Your explicit consent (GDPR Art. 6(1)(a) and, for special categories such as "
            "religion, Art. 9(2)(a))",
        )
        PUBLIC_INTEREST_RESEARCH = (
            "public_interest_research",
            "A task in the public interest (GDPR Art. 6(1)(e)) and scientific research with "
            "safeguards (Art. 9(2)(j) and 89)",
        )

    REQUIRED = (
        "controller",
        "contact_email",
        "dpo_contact",
        "legal_basis",
        "retention",
        "complaint",
        "ethics_reference",
        "text",
    )

    study = study_field("consent_texts")
    language = models.CharField(
        max_length=16, default=SOURCE_LANGUAGE, help_text="The language this text is in."
    )
    version = models.PositiveIntegerField(help_text="Counted per study and language.")
    controller = models.CharField(
        max_length=300, blank=True, help_text="The institution responsible for the data."
    )
    contact_email = models.EmailField(
        blank=True,
        verbose_name="contact e-mail",
        help_text="The study team's address, for questions and requests.",
    )
    dpo_contact = models.CharField(
        max_length=300,
        blank=True,
        verbose_name="data protection officer",
        help_text="How to reach the institution's data protection officer.",
    )
    legal_basis = models.CharField(max_length=40, choices=LegalBasis.choices, blank=True)
    retention = models.CharField(
        max_length=300,
        blank=True,
        help_text="How long the data is kept, e.g. 'until 31 December 2031'.",
    )
    complaint = models.CharField(
        max_length=300,
        blank=True,
        verbose_name="right to complain",
        help_text="The supervisory authority a participant may complain to.",
    )
    ethics_reference = models.CharField(
        max_length=200, blank=True, help_text="The ethics board and its approval reference."
    )
    demonstration = models.BooleanField(
        default=False,
        help_text="Filled with made-up values to try the platform (bin/run); not for a study.",
    )
    text = models.TextField(
        verbose_name="free text",
        help_text="What the study is, what taking part means, and the participant's rights.",
    )
    # What a public dataset release may hold (training.releases): a release cannot be
    # recalled, so each participant's own version decides, and "no" is the default (versions
    # published before these fields read as no). The consent page shows all three.
    release_rankings = models.BooleanField(
        default=False,
        verbose_name="rankings may be released",
        help_text="The participant's rankings may be published in a public dataset, under a "
        "pseudonym made for that release only.",
    )
    release_demographics = models.JSONField(
        default=list,
        blank=True,
        verbose_name="answers that may be released",
        help_text="Keys of the demographic fields whose answers may be published with the "
        "rankings, only in combinations that k or more released participants share.",
    )
    release_free_text = models.BooleanField(
        default=False,
        verbose_name="own words may be released",
        help_text="Answers in the participant's own words may be published too (otherwise "
        "only the listed choices are).",
    )
    published_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-version"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "language", "version"], name="consent_version_per_language"
            )
        ]

    def __str__(self) -> str:
        return f"consent v{self.version} ({self.language})"

    def clean(self) -> None:
        keys = self.release_demographics
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            raise ValidationError({"release_demographics": "A list of demographic field keys."})
        if len(set(keys)) != len(keys):
            raise ValidationError({"release_demographics": "Each key may appear only once."})
        known = set(DemographicField.objects.filter(key__in=keys).values_list("key", flat=True))
        if unknown := [k for k in keys if k not in known]:
            raise ValidationError(
                {"release_demographics": f"No demographic field {', '.join(unknown)}."}
            )
        if (keys or self.release_free_text) and not self.release_rankings:
            raise ValidationError(
                {
                    "release_rankings": "Answers are released only with the rankings: allow "
                    "the rankings too, or release no answers."
                }
            )

    def release_terms(self) -> dict:
        """What a release may hold of those who agreed to this version."""
        return {
            "rankings": self.release_rankings,
            "demographics": list(self.release_demographics or []),
            "free_text": self.release_free_text,
        }


class AnnotatorStatus(models.TextChoices):
    """What the quality policy (annotation/stats/policy.py) or staff made of an annotator."""

    OK = "ok", "OK"
    WARNED = "warned", "Warned"
    EXCLUDED = "excluded", "Excluded"


class SyntheticKind(models.TextChoices):
    """How a synthetic annotator ranks (``annotation.studies.simulation``); careless ones
    test the policy."""

    CAREFUL = "careful", "Careful"
    RANDOM = "random", "Random order"
    SHOWN = "shown", "Keeps the shown order"
    HURRIED = "hurried", "Hurried"
    EQUAL = "equal", "Calls every card equal"


class Instructions(models.Model):
    """A version of a study's instructions with worked examples, in one of its languages,
    shown before the first task; staff publish a new version (``manage.py instructions``,
    or the admin), the newest in the participant's language is the one shown."""

    study = study_field("instructions")
    language = models.CharField(
        max_length=16, default=SOURCE_LANGUAGE, help_text="The language these are in."
    )
    version = models.PositiveIntegerField(help_text="Counted per study and language.")
    text = models.TextField(help_text="Plain text; a blank line starts a new paragraph.")
    published_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-version"]
        verbose_name_plural = "instructions"
        constraints = [
            models.UniqueConstraint(
                fields=["study", "language", "version"], name="instructions_version_per_language"
            )
        ]

    def __str__(self) -> str:
        return f"instructions v{self.version} ({self.language})"


class AnnotatorProfile(models.Model):
    """A participant of one study: the same person (or platform id) in two studies is two
    profiles, as crowd platforms pay per study."""

    study = study_field("annotators")
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="annotator"
    )
    # Self-described answers keyed by DemographicField.key; personal data, staff only.
    demographics = models.JSONField(default=dict, blank=True)
    quota = models.PositiveIntegerField(default=20)
    is_synthetic = models.BooleanField(default=False)
    synthetic_kind = models.CharField(max_length=20, choices=SyntheticKind.choices, blank=True)
    # Kept by annotation.quality.standing (the policy, or staff); its history is StatusChange.
    status = models.CharField(
        max_length=20, choices=AnnotatorStatus.choices, default=AnnotatorStatus.OK
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Set by annotation.participants.erasure: demographics, external ids and rankings are gone.
    erased_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(synthetic_kind="") | Q(is_synthetic=True),
                name="synthetic_kind_only_for_synthetic",
            )
        ]

    def __str__(self) -> str:
        return f"annotator {self.user_id}"


class StatusChange(models.Model):
    """One change of an annotator's status: from what, to what, why, by whom, when.

    ``by`` is the staff member who made it, or empty when the policy did.
    """

    annotator = models.ForeignKey(
        AnnotatorProfile, on_delete=models.CASCADE, related_name="status_changes"
    )
    previous = models.CharField(max_length=20, choices=AnnotatorStatus.choices)
    status = models.CharField(max_length=20, choices=AnnotatorStatus.choices)
    reason = models.TextField()
    by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.CheckConstraint(condition=~Q(reason=""), name="status_change_has_a_reason")
        ]

    def __str__(self) -> str:
        return f"{self.annotator}: {self.previous} -> {self.status}"


class ConsentQuerySet(models.QuerySet):
    def active(self) -> "ConsentQuerySet":
        """Consents not withdrawn: an annotator with one may rank and be exported."""
        return self.filter(withdrawn_at__isnull=True)


class Consent(models.Model):
    """An annotator's agreement to one consent version; withdrawal is timestamped."""

    annotator = models.ForeignKey(
        AnnotatorProfile, on_delete=models.CASCADE, related_name="consents"
    )
    text = models.ForeignKey(ConsentText, on_delete=models.PROTECT, related_name="consents")
    given_at = models.DateTimeField(auto_now_add=True)
    withdrawn_at = models.DateTimeField(null=True, blank=True)

    objects = ConsentQuerySet.as_manager()

    class Meta:
        ordering = ["-given_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["annotator"],
                condition=Q(withdrawn_at__isnull=True),
                name="one_active_consent_per_annotator",
            )
        ]
