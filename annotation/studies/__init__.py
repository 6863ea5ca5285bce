"""Studies: their lifecycle, their tasks built, synthetic annotators."""
