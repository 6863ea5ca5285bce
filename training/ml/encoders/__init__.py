"""Encoders: find, load and identify a frozen SentenceTransformer, export quantized copies
of it, and gate those copies; one module per idea, imported by their own names.

- ``identity``: ``EncoderIdentity`` (what an embedding depends on) and the encoders' errors;
- ``resolve``: the folder of an encoder, offline (the seed encoder assembled from its parts);
- ``encoder``: ``Encoder``, a loaded one, and ``pick_device``;
- ``loading``: ``load_encoder``, once per process, on torch or an exported backend;
- ``exported``: ONNX and OpenVINO copies, fp32 or int8, exported once and verified;
- ``presets``: the int8 presets (presets per CPU, layers kept fp32, calibration texts);
- ``gate``: the accuracy gate a copy passes before it may stand in for the original.
"""
