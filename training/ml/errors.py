"""The one root of ``training.ml``'s errors; Django's services translate it once
(``training.errors.ml_refusals``) into the project's own.

Each error keeps, beside the root, the built-in kind it always had (``ValueError``
for bad input such as an unknown encoder or a damaged checkpoint, ``RuntimeError``
for a back-end that failed), so plain-Python callers of the library catch it as
before.
"""


class MLError(Exception):
    """Base of every error ``training.ml`` raises on purpose; the message says why."""
