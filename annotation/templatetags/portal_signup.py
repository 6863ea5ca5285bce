"""The portal's template tag ``signup_open``: whether the header offers "Sign up" (the
default study takes sign-ups only where its owner turned them on: ``Study.open_signup``)."""

from django import template

from annotation.errors import SignupClosed
from annotation.participants import admission

register = template.Library()


@register.simple_tag
def signup_open() -> bool:
    try:
        admission.signup_study(None)
    except SignupClosed:
        return False
    return True
