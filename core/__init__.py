"""The bottom layer every app imports: the error hierarchy and its translations, the
command base, the read-only admin, the JSON helper and the small-groups rule. It imports
no app and nothing of ``web``."""
