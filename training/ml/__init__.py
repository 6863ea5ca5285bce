"""The reward-model core of stereorank: a plain library, no Django below here.

Modules: ``encoders`` (a package: resolve and load an encoder offline, its
quantized copies and their accuracy gate), ``cache`` (the embedding cache),
``examples``, ``split`` and ``synthetic`` (the data), ``losses``, ``model``,
``metrics``, ``calibration``, ``train`` and ``checkpoints``; ``chat`` (the
OpenAI-compatible client) and ``backends`` (what the back-ends share) with the
packages that use them, ``paraphrase`` and ``optimise`` (the DJ-PO prompt
optimiser); ``errors`` (``MLError``, the root of every error raised here).
``python -m training.ml`` is its command line.
"""

__version__ = "0.1.0"
