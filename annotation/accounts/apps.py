"""The accounts app: a Django app of its own only for its migrations (the API tokens'
move to hashed storage) and its admin; it has no models. A password that changes ends
the account's API tokens, as it ends its sessions."""

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "annotation.accounts"
    label = "accounts"
    verbose_name = "Accounts"

    def ready(self) -> None:
        from django.contrib.auth import get_user_model
        from django.db.models.signals import post_save

        post_save.connect(
            _password_changed, sender=get_user_model(), dispatch_uid="accounts.tokens.password"
        )


def _password_changed(sender, instance, created: bool, **kwargs) -> None:
    """``set_password`` then ``save``: every API token of the account is revoked (Django
    keeps the new raw password on ``_password`` until the save is done)."""
    if not created and getattr(instance, "_password", None) is not None:
        from annotation.accounts.tokens import revoke_all

        revoke_all(instance)
