"""Who may come in: password lockout, API tokens, the second factor, and the one rule
of which accounts need a second factor (``policy``)."""
