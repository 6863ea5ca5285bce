"""The pseudonym key (issue 31, part 8): a setting of its own (STEREORANK_PSEUDONYM_KEY),
defaulting to today's derivation (an HMAC keyed with SECRET_KEY) so existing pseudonyms do
not change; ``manage.py check --deploy`` warns while it is not set."""

import hashlib
import hmac

from django.conf import settings
from django.core.checks import registry

from annotation.rankings.checks import pseudonym_key
from annotation.rankings.exports import pseudonym


def test_without_the_setting_pseudonyms_are_what_they_were():
    assert not settings.STEREORANK["PSEUDONYM_KEY_GIVEN"]  # the test environment sets none
    before = hmac.new(settings.SECRET_KEY.encode(), b"42", hashlib.sha256).hexdigest()[:12]
    assert pseudonym(42) == "a-" + before


def test_a_key_of_its_own_gives_other_pseudonyms(settings):
    old = pseudonym(42)
    settings.STEREORANK = {**settings.STEREORANK, "PSEUDONYM_KEY": "k" * 50}
    assert pseudonym(42) != old and pseudonym(42) == pseudonym(42)


def test_check_deploy_warns_while_the_key_is_missing(settings):
    assert pseudonym_key in registry.registry.get_checks(include_deployment_checks=True)
    assert pseudonym_key not in registry.registry.get_checks(include_deployment_checks=False)
    (warning,) = pseudonym_key(None)
    assert warning.id == "stereorank.W001" and "STEREORANK_PSEUDONYM_KEY" in warning.msg
    settings.STEREORANK = {**settings.STEREORANK, "PSEUDONYM_KEY_GIVEN": True}
    assert pseudonym_key(None) == []
