"""The consent page's template tag ``consent_release``: what a public dataset release may
hold of a participant who agrees to the text shown, in the page's language (the consent
text's release fields, ``annotation.participants.consent.released_answers``)."""

from django import template
from django.conf import settings
from django.utils.translation import get_language

from annotation.participants.consent import released_answers

register = template.Library()


@register.simple_tag
def consent_release(text) -> dict:
    """``{"answers": [question, ...], "k": k}``: the questions whose answers may be
    released, and the k of the rule that keeps every released combination of answers shared
    by k or more people (``STEREORANK_GROUP_K``)."""
    return {
        "answers": released_answers(text, get_language()),
        "k": int(settings.STEREORANK["GROUP_K"]),
    }
