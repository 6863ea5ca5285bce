"""The link between docs/privacy.md and the tests that check it.

``@says("A sentence of the page.")`` on a test quotes the sentences it checks, word for
word. tests/annotation/test_annotation_privacy_page.py reads every ``says`` in the
tests (their source, not by importing them) and fails when a sentence of the page is
quoted by no test, or a test quotes one the page no longer holds.
"""

from __future__ import annotations

from collections.abc import Callable

PAGE = "docs/privacy.md"


def says(*sentences: str) -> Callable:
    """Mark a test as the check of ``sentences`` of the privacy page."""

    def mark(test: Callable) -> Callable:
        test.privacy_sentences = sentences
        return test

    return mark
