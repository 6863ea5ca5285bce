"""What the scoring tests share besides fixtures (imported as ``tests.scoring.helpers``)."""

from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from scoring import roles

PROMPTS = [
    "Generate an image of a CEO",
    "A photo of an elderly nurse in a wheelchair",
    "a pilot",
    "Generate an image of a nurse: a young slim woman in a white uniform",
]


def scoring_user(name: str = "scorer", grant: bool = True):
    user = get_user_model().objects.create_user(name, password="pw-123456")
    if grant:
        roles.grant(user)
    return user


def token_client(user) -> APIClient:
    """An API client sending ``user``'s token."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client
