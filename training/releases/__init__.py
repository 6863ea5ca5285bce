"""A snapshot's labels released as a Hugging Face dataset with its card: what consent allowed."""
