"""Where weights live: encoders loaded, checkpoints stored and fetched."""
