"""manage.py grant_scoring USER [--revoke]: give (or take) the scoring role."""

from core.commands import ServiceCommand
from scoring import roles, selectors
from scoring.errors import UnknownUser


class Command(ServiceCommand):
    help = "Put a user in the scoring role (the 'scoring' group), or take them out."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--revoke", action="store_true", help="Take the role away.")

    def handle(self, *args, **options):
        name = options["username"]
        user = selectors.user_named(name)
        if user is None:
            raise UnknownUser(f"there is no user {name!r}")
        if options["revoke"]:
            changed = roles.revoke(user)
            self.stdout.write(
                f"{name} {'no longer has' if changed else 'did not have'} the scoring role"
            )
        else:
            changed = roles.grant(user)
            self.stdout.write(f"{name} {'now has' if changed else 'already had'} the scoring role")
