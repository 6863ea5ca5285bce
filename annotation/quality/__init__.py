"""Quality control on the Django side: the report, its store, annotators' standing."""
