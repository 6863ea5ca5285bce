"""The reward-model core of stereorank: a plain library, no Django below here.

Modules: ``encoders`` (resolve and load an encoder offline, the embedding
cache), ``data``, ``losses``, ``model``, ``metrics``, ``calibration``,
``train`` and ``checkpoints``; ``chat`` (the OpenAI-compatible client) with
the packages that use it, ``paraphrase`` and ``optimise`` (the DJ-PO prompt
optimiser). ``python -m training.ml`` is its command line.
"""

__version__ = "0.1.0"
