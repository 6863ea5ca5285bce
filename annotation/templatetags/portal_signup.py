"""The portal's template tag ``signup_open``: whether the header offers "Sign up" (the
default study takes sign-ups only where its owner turned them on: ``Study.open_signup``)."""

from django import template
from django.db import DatabaseError

from annotation.errors import SignupClosed
from annotation.participants import admission

register = template.Library()


@register.simple_tag
def signup_open() -> bool:
    """False when closed, and when the database cannot say (an outage, tables not made
    yet): a header link never turns a page, a 404 or a log-in page, into an error."""
    try:
        admission.signup_study(None)
    except (SignupClosed, DatabaseError):
        return False
    return True
