"""A snapshot's labels released as a Hugging Face dataset, with its card: only what consent allowed."""
