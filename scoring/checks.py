"""System checks of the scoring settings (``manage.py check`` says what is wrong)."""

from importlib.util import find_spec

from django.conf import settings
from django.core.checks import Error, register

from scoring.serving import UNGATED

# The runtime each exported backend needs (pip install 'stereorank[quant]').
RUNTIMES = {"onnx": "onnxruntime", "openvino": "openvino"}


@register()
def serving_encoder(app_configs, **kwargs) -> list[Error]:
    """ENCODER_BACKEND/ENCODER_QUANTIZATION name an encoder this library runs (its runtime
    installed), UNGATED is refuse or fp32."""
    from training.ml.encoders.identity import EncoderError, check_backend

    scoring = settings.STEREORANK["SCORING"]
    backend, quantization = scoring["ENCODER_BACKEND"], scoring["ENCODER_QUANTIZATION"]
    errors = []
    try:
        check_backend(backend, quantization)
    except EncoderError as error:
        errors.append(Error(f"STEREORANK['SCORING'] ENCODER_BACKEND/ENCODER_QUANTIZATION: {error}"))
    else:
        runtime = RUNTIMES.get(backend)
        if runtime and find_spec(runtime) is None:
            errors.append(
                Error(
                    f"STEREORANK['SCORING']['ENCODER_BACKEND'] is {backend!r} but {runtime} is "
                    "not installed: pip install 'stereorank[quant]'"
                )
            )
    if scoring["UNGATED"] not in UNGATED:
        errors.append(
            Error(
                f"STEREORANK['SCORING']['UNGATED'] must be {' or '.join(map(repr, UNGATED))}, "
                f"not {scoring['UNGATED']!r}"
            )
        )
    return errors
