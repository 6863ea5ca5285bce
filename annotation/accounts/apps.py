"""The accounts app: a Django app of its own only for its migrations (the API tokens'
move to hashed storage) and its admin; it has no models."""

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "annotation.accounts"
    label = "accounts"
    verbose_name = "Accounts"
