"""A study's life on its crowd platform: published from ours (``publish``), its
submissions pulled and matched, full groups removed from the screening and the study
paused when every place is taken (``sync``). Decisions about pay: ``annotation.crowd.review``;
bonuses: ``annotation.crowd.payments``.

Every function that changes something on the platform is a dry run unless ``apply``: it
returns the lines saying what it would send and why, and sends nothing.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import get_language_info

from annotation.assignment.quotas import quota_fill
from annotation.crowd import screening as screens
from annotation.crowd.models import PlatformStudy, Submission
from annotation.crowd.platform import CrowdPlatform, PlatformError, StudyDraft
from annotation.crowd.prolific import Prolific
from annotation.models import DemographicField, Participation, Ranking, Study
from annotation.participants import recruitment
from core.errors import Conflict

# Minutes a participant spends before the first task and after the last (consent,
# demographics, instructions, practice), added to the time the tasks take.
OVERHEAD_MINUTES = 4
# Statuses in which a submission holds a place on Prolific.
HOLDS_A_PLACE = frozenset({"ACTIVE", "AWAITING REVIEW", "APPROVED"})


@dataclass
class Report:
    """What a command prints: one line each."""

    lines: list[str] = field(default_factory=list)

    def say(self, line: str) -> None:
        self.lines.append(line)


def client() -> CrowdPlatform:
    """The Prolific client configured by the settings (``STEREORANK_PROLIFIC_*``)."""
    conf = settings.STEREORANK["PROLIFIC"]
    return Prolific(
        conf["TOKEN"], conf["API_URL"], timeout=conf["TIMEOUT"], backoff_s=conf["BACKOFF_S"]
    )


def platform_study(study: Study) -> PlatformStudy:
    found = PlatformStudy.objects.filter(study=study).first()
    if found is None:
        raise Conflict(f"Study {study.slug} is not published: run `prolific publish` first.")
    return found


def estimated_minutes(study: Study) -> int | None:
    """Minutes a participant needs, from the study's own times per answer (the median) and
    their quota, with ``OVERHEAD_MINUTES``; None before any timed answer."""
    seconds = list(
        Ranking.objects.filter(task__study=study, seconds_spent__isnull=False).values_list(
            "seconds_spent", flat=True
        )[:5000]
    )
    if not seconds:
        return None
    quota = study.tasks_per_participant or recruitment.default_quota(study)
    return math.ceil(statistics.median(seconds) * quota / 60) + OVERHEAD_MINUTES


def study_screening(study: Study, catalogue: list[dict]) -> screens.Screening:
    """The screening of ``study`` now: its languages and its groups, full ones removed."""
    groups = [
        screens.Group(row["field__key"], row["value"], row["target"], row["filled"])
        for row in quota_fill(timezone.now(), study)
    ]
    choices = dict(DemographicField.objects.values_list("key", "choices"))
    names = [get_language_info(code)["name"] for code in study.languages or ["en"]]
    return screens.screening(groups, choices, names, catalogue)


def _publishable(study: Study) -> None:
    """Refuse a study that is not a Prolific one with both codes, or no https site."""
    missing = [name for name in ("completion_code", "screen_out_code") if not getattr(study, name)]
    if study.platform != Study.Platform.PROLIFIC or missing:
        raise Conflict(
            f"Study {study.slug} is not a Prolific study with both codes"
            + (f" (missing: {', '.join(missing)})" if missing else "")
            + ": see create_study --platform prolific."
        )
    if not settings.STEREORANK["SITE_URL"].startswith("https://"):
        raise Conflict("Set STEREORANK_SITE_URL to the https:// address participants reach.")


def _draft(study: Study, reward_cents: int, places: int, minutes: int, filters) -> StudyDraft:
    site = settings.STEREORANK["SITE_URL"]
    return StudyDraft(
        name=study.name,
        internal_name=f"stereorank:{study.slug}",
        description=f"Rank images by how stereotypical they are ({study.name}).",
        entry_url=recruitment.entry_link(study, site),
        completion_code=study.completion_code,
        screen_out_code=study.screen_out_code,
        places=places,
        reward_cents=reward_cents,
        minutes=minutes,
        filters=filters,
    )


def publish(
    study: Study,
    reward_cents: int,
    places: int,
    minutes: int | None,
    apply: bool,
    platform: CrowdPlatform | None = None,
) -> Report:
    """Create ``study`` on Prolific and publish it (with ``apply``); once published, a
    second run finds it and creates nothing."""
    report = Report()
    if existing := PlatformStudy.objects.filter(study=study).first():
        report.say(f"already created: Prolific study {existing.external_id} ({existing.status})")
        if existing.status == PlatformStudy.Status.UNPUBLISHED and apply:
            _publish(platform or client(), existing, report)
        return report
    _publishable(study)  # before the token is asked for: what the study lacks first
    if reward_cents < 1 or places < 1:
        raise Conflict("--reward-cents and --places must be 1 or more.")
    minutes = minutes or estimated_minutes(study)
    if not minutes:
        raise Conflict("No timed answers yet to estimate the study's length: give --minutes.")
    platform = platform or client()
    shown = study_screening(study, platform.filters())
    draft = _draft(study, reward_cents, places, minutes, shown.filters)
    report.say(f"study {study.slug} -> Prolific: {draft.name!r} ({draft.internal_name})")
    report.say(f"  entry link: {draft.entry_url}")
    report.say(f"  codes: completed {draft.completion_code}, screened out {draft.screen_out_code}")
    report.say(f"  places {places}, reward {reward_cents} cents, about {minutes} minutes")
    report.lines.extend(f"  screening: {note}" for note in shown.notes)
    if not apply:
        report.say("dry run: nothing sent (--apply creates and publishes)")
        return report
    remote = platform.find_study(draft.internal_name) or platform.create_study(draft)
    PlatformStudy.objects.create(
        study=study,
        platform=platform.name,
        external_id=remote.id,
        status=PlatformStudy.Status.UNPUBLISHED,
        currency=remote.currency,
        reward_cents=reward_cents,
        places=places,
        minutes=minutes,
        screening=shown.filters,
        removed_groups=shown.removed,
    )
    report.say(f"created: Prolific study {remote.id}")
    _publish(platform, PlatformStudy.objects.get(study=study), report)
    return report


def _publish(platform: CrowdPlatform, record: PlatformStudy, report: Report) -> None:
    platform.transition(record.external_id, "PUBLISH")
    record.status, record.published_at = PlatformStudy.Status.ACTIVE, timezone.now()
    record.save(update_fields=["status", "published_at"])
    report.say(f"published: Prolific study {record.external_id}")


def sync(study: Study, apply: bool = True, platform: CrowdPlatform | None = None) -> Report:
    """Pull the submissions and match them to participations by submission id; remove full
    groups from the screening; pause the study when every place is taken."""
    record = platform_study(study)
    platform = platform or client()
    report = Report()
    remote = platform.submissions(record.external_id)
    ours = dict(
        Participation.objects.filter(study=study, session_id__in=[s.id for s in remote])
        .order_by("-pk")  # a session id twice: the first participation holds it
        .values_list("session_id", "pk")
    )
    with transaction.atomic():
        for sub in remote:  # the participant id stays in ``remote``, in memory
            if sub.id not in ours:  # counted, not stored (an erased person's among them)
                continue
            Submission.objects.update_or_create(
                submission_id=sub.id,
                defaults={
                    "study": study,
                    "participation_id": ours.get(sub.id),
                    "status": sub.status,
                },
            )
    unmatched = sum(1 for sub in remote if sub.id not in ours)
    report.say(
        f"{len(remote)} submissions, {len(remote) - unmatched} matched to participations"
        + (f", {unmatched} with no participation of ours" if unmatched else "")
    )
    _rescreen(study, record, platform, report, apply)
    _pause_when_full(record, remote, platform, report, apply)
    return report


def _rescreen(study, record, platform, report: Report, apply: bool) -> None:
    shown = study_screening(study, platform.filters())
    newly = sorted(set(shown.removed) - set(record.removed_groups))
    if not newly:
        return
    report.say(f"groups full, removed from the screening: {', '.join(newly)}")
    if apply:
        platform.set_screening(record.external_id, shown.filters)
        record.screening, record.removed_groups = shown.filters, shown.removed
        record.save(update_fields=["screening", "removed_groups"])


def _pause_when_full(record, remote, platform, report: Report, apply: bool) -> None:
    taken = sum(1 for sub in remote if sub.status in HOLDS_A_PLACE)
    if record.status != PlatformStudy.Status.ACTIVE or taken < record.places:
        report.say(f"places taken: {taken} of {record.places}")
        return
    report.say(f"every place taken ({taken} of {record.places}): study paused")
    if apply:
        platform.transition(record.external_id, "PAUSE")
        record.status, record.paused_at = PlatformStudy.Status.PAUSED, timezone.now()
        record.save(update_fields=["status", "paused_at"])


__all__ = ["PlatformError", "Report", "client", "publish", "sync", "platform_study"]
