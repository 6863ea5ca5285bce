"""Reviewing a study's submissions on its crowd platform: who is approved, who rejected,
who held for a person (``verdict``, pure), and the review run (``review``): a dry run
unless ``apply``; approvals and rejections are final on the platform, so what the dry run
prints is what a person reads first.

The rule, per Prolific's rules for researchers ("Approvals, rejections & returns"):
- approved: the study's minimum answered, whatever the quality checks then found on gold
  tasks or untouched rankings (their rankings stay out of the labels; the participant did
  the work and could not see those checks);
- rejected (``FAILED_CHECK``) only on attention checks the participant could read: the
  attention-check criterion excluded them, with at least ``MIN_FAILED_CHECKS`` (Prolific
  asks for two or more) failed checks answered in a window whose width was recorded
  (checks failed before widths were recorded may have been hidden by a phone's layout);
- held for a person: checks failed only before widths were recorded, a screened-out
  participant (never rejected), a duplicate (a crowd id or a session id seen before), the
  minimum not reached, a submission with no participation of ours.

"Screened out" is what Prolific means by it: declined consent or a full group
(``Participation.ScreenOut``). An annotator the quality policy excluded also leaves with
the screen-out code (``ScreenOut.EXCLUDED``), but is not screened out in that sense: the
rule above decides, and only attention checks can make it a rejection.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils import translation
from django.utils.translation import gettext, gettext_noop

from annotation.crowd.models import LedgerEntry
from annotation.crowd.platform import CrowdPlatform
from annotation.crowd.services import Report, client, platform_study
from annotation.models import AnnotatorStatus, Participation, Study
from annotation.participants import recruitment
from annotation.quality import selectors as quality_selectors
from annotation.quality import standing

MIN_FAILED_CHECKS = 2
REJECTION = gettext_noop(
    "Your submission was rejected because %(failed)s attention checks were failed. Each check "
    "was a card whose text asked you to place it first or last, and it was shown in full in "
    "your browser window. If you think this is a mistake, please write to the researchers "
    "through Prolific."
)
AWAITING_REVIEW = "AWAITING REVIEW"
APPROVE, REJECT, HOLD = LedgerEntry.Kind.APPROVE, LedgerEntry.Kind.REJECT, LedgerEntry.Kind.HOLD


@dataclass(frozen=True)
class Facts:
    """What the rule reads of one submission's participation."""

    matched: bool
    duplicate: bool = False
    shared: bool = False  # two participations of ours hold this submission id
    screen_out: str = ""
    answers: int = 0
    minimum: int = 1
    excluded_on_checks: bool = False
    failed_readable: int = 0
    failed_unknown_width: int = 0


@dataclass(frozen=True)
class Verdict:
    kind: str
    reason: str


def verdict(facts: Facts) -> Verdict:
    """The decision on one submission awaiting review (pure)."""
    if not facts.matched:
        return Verdict(HOLD, "no participation of ours holds this submission id")
    if facts.shared:
        return Verdict(HOLD, "two participations of ours hold this submission id: which did it?")
    if facts.duplicate:
        return Verdict(HOLD, "a second participation of one crowd id: check before paying twice")
    if facts.screen_out in (
        Participation.ScreenOut.DECLINED_CONSENT,
        Participation.ScreenOut.GROUP_FULL,
    ):
        return Verdict(HOLD, f"screened out ({facts.screen_out}): never rejected")
    if facts.excluded_on_checks:
        if facts.failed_readable >= MIN_FAILED_CHECKS:
            return Verdict(
                REJECT, f"{facts.failed_readable} attention checks failed where they were readable"
            )
        if facts.failed_unknown_width:
            return Verdict(
                HOLD,
                f"excluded on attention checks, {facts.failed_unknown_width} of them failed "
                "before window widths were recorded (a phone may have hidden them)",
            )
        return Verdict(
            HOLD, f"excluded on attention checks, fewer than {MIN_FAILED_CHECKS} readable ones"
        )
    if facts.answers < facts.minimum:
        return Verdict(HOLD, f"{facts.answers} answers, below the study's minimum {facts.minimum}")
    return Verdict(APPROVE, f"{facts.answers} answers, the study's minimum {facts.minimum} met")


def rejection_message(language: str, failed: int) -> str:
    """What a rejected participant reads on the platform, in their portal language; at
    least 100 characters, as Prolific requires."""
    with translation.override(language or "en"):
        message = gettext(REJECTION) % {"failed": failed}
    # A translation too short for Prolific's minimum would stop the run: English instead.
    return message if len(message) >= 100 else REJECTION % {"failed": failed}


def _facts(study: Study) -> dict[str, tuple[Facts, Participation]]:
    """Facts per submission id of the study's participations (four queries and one per
    excluded annotator)."""
    readable: dict[int, tuple[int, int]] = {}
    for row in quality_selectors.failed_attention_checks(study):
        known = sum(1 for check in row.failed if check.viewport_width is not None)
        readable[row.profile.pk] = (known, len(row.failed) - known)
    rules = standing.policy()
    out = {}
    rows = Participation.objects.filter(study=study).exclude(session_id="").order_by("pk")
    for part in rows.select_related("annotator", "study"):
        if part.session_id in out:  # a second participation of one submission
            out[part.session_id] = (Facts(matched=True, shared=True), out[part.session_id][1])
            continue
        profile = part.annotator
        on_checks = False
        if profile.status == AnnotatorStatus.EXCLUDED:
            quality = standing.quality_of(profile)
            fired = rules.fired(quality) if quality is not None else {}
            on_checks = fired.get("checks", ("", ""))[0] == AnnotatorStatus.EXCLUDED
        known, unknown = readable.get(profile.pk, (0, 0))
        facts = Facts(
            matched=True,
            duplicate=part.duplicate,
            screen_out=part.screen_out_reason,
            answers=profile.rankings.count(),
            minimum=recruitment.minimum_work(part),
            excluded_on_checks=on_checks,
            failed_readable=known,
            failed_unknown_width=unknown,
        )
        out[part.session_id] = (facts, part)
    return out


def review(study: Study, apply: bool, by=None, platform: CrowdPlatform | None = None) -> Report:
    """Decide every submission awaiting review; with ``apply``, send each approval and
    rejection and record every decision in the ledger (a hold too, once)."""
    record = platform_study(study)
    platform = platform or client()
    report = Report()
    facts = _facts(study)
    decided = set(
        LedgerEntry.objects.filter(study=study)
        .exclude(kind=LedgerEntry.Kind.BONUS)
        .values_list("submission_id", "kind")
    )
    counts = {APPROVE: 0, REJECT: 0, HOLD: 0}
    for sub in platform.submissions(record.external_id):
        if sub.status != AWAITING_REVIEW:
            continue
        fact, part = facts.get(sub.id, (Facts(matched=False), None))
        found = verdict(fact)
        counts[found.kind] += 1
        report.say(f"{found.kind:8} {sub.id}  {found.reason}")
        if not apply or (sub.id, found.kind) in decided:
            continue
        if found.kind == REJECT:
            message = rejection_message(part.language, fact.failed_readable)
            platform.reject(sub.id, message, "FAILED_CHECK")
        elif found.kind == APPROVE:
            platform.approve(sub.id)
        with transaction.atomic():
            LedgerEntry.objects.create(
                study=study,
                kind=found.kind,
                submission_id=sub.id,
                participation=part,
                reason=found.reason,
                by=by,
            )
    summary = ", ".join(f"{n} {kind}" for kind, n in counts.items())
    report.say(f"{summary}" + ("" if apply else "; dry run: nothing sent (--apply sends, final)"))
    return report
