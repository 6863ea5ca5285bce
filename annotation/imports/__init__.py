"""Rankings brought from Label Studio, Argilla or Potato (``manage.py import_annotations``).

- ``records``: the neutral records every parser gives (an annotator's answer to a set of
  items, as tiers, with its position in the file) and the reading of JSON / JSON Lines;
- ``label_studio``, ``argilla``, ``potato``: one parser per tool, pure functions from an
  export's bytes to neutral records, each saying where the shape it reads is documented;
- ``models``: ``ImportSource`` (a source study, named, with the owner's basis),
  ``ImportBatch`` (a file, by its SHA-256), ``ImportedAnnotator`` (a profile made for a
  person of a source, under a keyed hash of their id);
- ``selectors``: the study's items to match against, the task with exactly a set of items;
- ``services``: the import in one transaction, recording and withdrawing the basis;
- ``admin``: the sources and batches, read only, for the study's owners.

Imported people gave us no consent: their rankings count exactly while their source's
basis is recorded and not withdrawn (``annotation.rankings.selectors.consent_stands``).
A Django app of its own (label ``imports``) so that its migrations stand apart.
"""
