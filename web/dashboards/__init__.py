"""Staff dashboards, one module per page: progress, quality, runs, registry, compare,
perspectives, schedules.

Views are thin: reads come from the selectors (each a fixed number of queries
whatever the number of rows), writes go through ``training.services`` (a
reinstatement through ``annotation.quality.standing``), and a
refused service call becomes a message (``core.errors.refusals_as_messages``).
Demographics are personal data; every view here is staff only. Nothing here
imports torch, scipy or matplotlib at import time: the URL conf stays light.
"""
