"""``manage.py prolific publish|sync|review|bonus STUDY``: a study's life on Prolific
(``annotation.crowd``). Whatever spends money or decides about pay is a dry run that
prints what it would send and why; ``--apply`` sends."""

from decimal import Decimal, InvalidOperation

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from annotation.crowd import payments, review, services
from annotation.studies import lifecycle as studies
from core.commands import ServiceCommand


def _money(text: str) -> Decimal:
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise CommandError(f"{text!r} is not an amount (e.g. 0.05)") from None
    if not value.is_finite() or value < 0 or value != value.quantize(Decimal("0.0001")):
        raise CommandError(f"{text!r} is not an amount (e.g. 0.05)")
    return value


class Command(ServiceCommand):
    help = __doc__

    def add_arguments(self, parser):
        steps = parser.add_subparsers(dest="step", required=True)
        publish = steps.add_parser("publish", help="create and publish the study on Prolific")
        publish.add_argument("study", metavar="STUDY")
        publish.add_argument("--reward-cents", type=int, required=True)
        publish.add_argument("--places", type=int, required=True)
        publish.add_argument("--minutes", type=int, help="default: from the study's own times")
        sync = steps.add_parser(
            "sync", help="pull submissions; remove full groups from the screening; pause when full"
        )
        sync.add_argument("study", metavar="STUDY")
        decide = steps.add_parser("review", help="approve, reject or hold each submission")
        decide.add_argument("study", metavar="STUDY")
        pay = steps.add_parser("bonus", help="pay a bonus per ranking, exactly once")
        pay.add_argument("study", metavar="STUDY")
        pay.add_argument("--per-ranking", required=True, type=_money)
        pay.add_argument("--max-total", type=_money)
        for step in (publish, decide, pay):
            step.add_argument("--apply", action="store_true", help="send (default: a dry run)")
        for step in (decide, pay):
            step.add_argument("--by", metavar="USERNAME", help="the staff member (recorded)")

    def handle(self, *args, step, study, apply=False, by=None, **options):
        study = studies.resolve(study)
        user = self._staff(by) if by else None
        if step == "publish":
            report = services.publish(
                study, options["reward_cents"], options["places"], options["minutes"], apply
            )
        elif step == "sync":
            report = services.sync(study)
        elif step == "review":
            report = review.review(study, apply, by=user)
        else:
            report = payments.bonus(
                study, options["per_ranking"], options["max_total"], apply, by=user
            )
        for line in report.lines:
            self.stdout.write(line)

    def _staff(self, username: str):
        user = get_user_model().objects.filter(username=username, is_staff=True).first()
        if user is None:
            raise CommandError(f"There is no staff user {username!r}.")
        return user
