"""Validation studies: conditions, their images, blinded tasks, the report."""
