"""The training side's staff API and its URLs."""
