"""Whose opinions a version rewards: perspective reports, their exports, group checks."""
