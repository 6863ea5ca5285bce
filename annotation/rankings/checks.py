"""Deploy checks of the exports' pseudonyms (``manage.py check --deploy`` warns)."""

from django.conf import settings
from django.core.checks import Tags, Warning, register


@register(Tags.security, deploy=True)
def pseudonym_key(app_configs, **kwargs) -> list[Warning]:
    """STEREORANK_PSEUDONYM_KEY is set: without it the pseudonyms in every export are an
    HMAC keyed with SECRET_KEY, so rotating that key (after a leak, say) would give every
    annotator a new pseudonym, and anyone holding SECRET_KEY can name them."""
    if settings.STEREORANK.get("PSEUDONYM_KEY_GIVEN", True):
        return []
    return [
        Warning(
            "STEREORANK_PSEUDONYM_KEY is not set: the exports' pseudonyms are keyed with "
            "DJANGO_SECRET_KEY and would all change if it were rotated.",
            hint="Set STEREORANK_PSEUDONYM_KEY to a secret of its own; to keep the "
            "pseudonyms exported so far, set it to the current DJANGO_SECRET_KEY.",
            id="stereorank.W001",
        )
    ]
