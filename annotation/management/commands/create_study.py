from django.conf import settings
from django.db import transaction

from annotation.access import roles
from annotation.access import services as access
from annotation.models import Study
from annotation.participants import recruitment
from annotation.stats import effort
from annotation.studies import lifecycle as studies
from annotation.validation import conditions
from core.commands import ServiceCommand
from core.languages import review as language_review


class Command(ServiceCommand):
    help = (
        "Create a study (a draft until opened with study_status SLUG open): its entry link "
        "is /join/SLUG/; it owns its items, tasks, consent, instructions and participants. "
        "A validation study takes the active version's flagged prompts, as written and as "
        "its optimiser rewrites them (--placeholder-images [N]: N placeholder images per "
        "prompt and condition, 3 by default, and their blinded tasks; --no-conditions: none yet)."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--kind", choices=Study.Kind.values, default=Study.Kind.COLLECTION)
        parser.add_argument("--name", default="", help="default: the slug")
        parser.add_argument("--task-size", type=int, help="items per task (default: TASK_SIZE)")
        parser.add_argument("--overlap", type=int, help="rankings per task (default: TASK_OVERLAP)")
        parser.add_argument(
            "--platform", choices=Study.Platform.values, default=Study.Platform.GENERIC
        )
        parser.add_argument(
            "--gold-per-occupation",
            type=int,
            default=1,
            metavar="N",
            help="gold tasks build_tasks makes per occupation (1); 0 needs --quality-off-reason",
        )
        parser.add_argument(
            "--checks-per-occupation",
            type=int,
            default=1,
            metavar="N",
            help="attention-check tasks build_tasks makes per occupation (1); 0 needs "
            "--quality-off-reason",
        )
        parser.add_argument(
            "--quality-off-reason",
            default="",
            metavar="TEXT",
            help="why gold or attention-check tasks are off, recorded on the study",
        )
        parser.add_argument(
            "--completion-code",
            default="",
            help="what a finished participant claims their pay with (Prolific, MTurk: "
            "required to open)",
        )
        parser.add_argument(
            "--completion-url",
            default="",
            help="https:// address a finished participant goes back to ({code} becomes the "
            "code; blank on Prolific: its completion address)",
        )
        parser.add_argument(
            "--screen-out-code",
            default="",
            help="what a screened-out participant returns with (Prolific, MTurk: required)",
        )
        parser.add_argument(
            "--screen-out-url", default="", help="https:// address a screened-out one goes to"
        )
        parser.add_argument(
            "--owner",
            metavar="USERNAME",
            help="a staff account made the study's owner (as grant USERNAME SLUG --role owner)",
        )
        parser.add_argument(
            "--placeholder-images",
            type=int,
            nargs="?",
            const=3,
            default=0,
            metavar="N",
            help="validation studies: N placeholder images per prompt and condition (3)",
        )
        parser.add_argument(
            "--languages",
            default="en",
            help="comma-separated codes participants may read the portal in, the first the "
            "default (e.g. nl,en,ar); each needs a shipped catalogue",
        )
        parser.add_argument(
            "--question",
            choices=Study.Question.values,
            default=Study.Question.RANK,
            help="what each task asks: rank (a strict order, the default), rank_ties, top_k "
            "(with --k), best_worst or pairwise (with --task-size 2)",
        )
        parser.add_argument("--k", type=int, help="top_k: how many cards are ordered")
        parser.add_argument(
            "--no-conditions",
            action="store_true",
            help="validation studies: none yet (add them with validation_condition)",
        )

    def handle(self, *args, slug, kind, name, task_size, overlap, platform, **options):
        placeholders = options["placeholder_images"]
        if placeholders and kind != Study.Kind.VALIDATION:
            raise conditions.ConditionError("--placeholder-images is for validation studies")
        if placeholders and options["no_conditions"]:
            raise conditions.ConditionError("--placeholder-images needs the conditions")
        if placeholders < 0:
            raise conditions.ConditionError("--placeholder-images must not be negative")
        with transaction.atomic():  # a validation study without its conditions is not made
            study = studies.create_study(
                slug,
                kind,
                name=name,
                task_size=task_size,
                overlap=overlap,
                platform=platform,
                gold_per_occupation=options["gold_per_occupation"],
                checks_per_occupation=options["checks_per_occupation"],
                quality_off_reason=options["quality_off_reason"],
                completion_code=options["completion_code"],
                completion_url=options["completion_url"],
                screen_out_code=options["screen_out_code"],
                screen_out_url=options["screen_out_url"],
                languages=[c.strip() for c in options["languages"].split(",") if c.strip()],
                question_format=options["question"],
                question_k=options["k"],
            )
            if options["owner"]:
                access.grant(study, options["owner"], roles.OWNER)
            made = None
            if kind == Study.Kind.VALIDATION and not options["no_conditions"]:
                made = conditions.from_active_version(study, placeholder_images=placeholders)
        asks = [study.kind, study.status]
        if study.question_format != Study.Question.RANK:  # the default goes unsaid
            asks.append(study.question_format)
            asks += [f"k={study.question_k}"] if study.question_k else []
        self.stdout.write(f"study {study.slug} created ({', '.join(asks)})")
        if study.question_format != Study.Question.RANK:
            self.stdout.write(effort_line(study))
        if options["owner"]:
            self.stdout.write(f"{options['owner']} owns it")
        for code in study.languages:
            if language_review(code) == "unreviewed":
                self.stderr.write(
                    f"warning: the {code} catalogue is unreviewed (machine or developer "
                    "translation): have a fluent reader check the pages before the study opens"
                )
        off = studies.quality_off(study.gold_per_occupation, study.checks_per_occupation)
        if off:
            self.stdout.write(f"{' and '.join(off)} off: {study.quality_off_reason}")
        if made:
            self.stdout.write(
                f"v{made['version']}: {made['prompts']} flagged prompts as written and "
                f"optimised, {made['images']} placeholder images, {made['tasks']} tasks "
                f"(an attention-check task per occupation among them) and {made['gold']} gold tasks"
            )


def effort_line(study: Study) -> str:
    """What a participant is asked for in a format other than rank, and its planning time
    (``annotation.stats.effort``)."""
    quota, least = recruitment.default_quota(study), recruitment.minimum_answers(study)
    size = study.task_size or settings.STEREORANK["TASK_SIZE"]
    minutes = effort.minutes(quota, study.question_format, size, study.question_k)
    return (
        f"each participant: {quota} answers, at least {least} for the code (about "
        f"{minutes:.0f} min, as {settings.STEREORANK['ANNOTATOR_QUOTA']} rankings of "
        f"{settings.STEREORANK['TASK_SIZE']} cards, by planning figures until quality "
        "measures this study's own)"
    )
