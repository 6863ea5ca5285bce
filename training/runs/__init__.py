"""Training runs: started, executed, recovered; augmentation, search, learning curves."""
