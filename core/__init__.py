"""The bottom layer every app imports: the error hierarchy and its translations, the
command base, the read-only admin and the JSON helper. It imports no app and nothing
of ``web``."""
