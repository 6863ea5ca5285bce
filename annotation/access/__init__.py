"""Who may see what: per-study roles, the demographics permission, the one queryset every
staff surface filters on, and the access log.

- ``roles``: the roles as data (which role may do what), pure Python;
- ``models``: ``StudyMembership`` (a staff account's role in a study, and whether it may
  read one person's demographic answers) and ``AccessLogEntry`` (append-only);
- ``backend``: Django's permission backend API, ``user.has_perm(capability, study)``;
- ``scope``: ``visible_studies(user, capability)``, the one queryset every staff surface
  filters on, and ``study_for`` (a study by slug, 404 when the viewer has no role in it);
- ``services``: grant and revoke, for the command, the admin and the staff API alike;
- ``log``: the access log's writer and reader (who read or exported which study's
  personal data, when, through which surface);
- ``admin``: the admin's scoping (querysets, change forms, inlines), the membership
  inline, the log's read-only page.

A Django app of its own (label ``access``) so that its migrations stand apart.
"""
