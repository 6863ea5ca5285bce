"""System checks of the study's quality settings (``manage.py check`` says what is wrong)."""

from django.conf import settings
from django.core.checks import Error, register
from django.core.exceptions import ImproperlyConfigured


@register()
def quality_settings(app_configs, **kwargs) -> list[Error]:
    """The paced rates (gold, checks, agreement) are fractions adding up to less than 1,
    AGREEMENT_FRACTION a fraction, GROUP_K and the overlaps at least 1,
    QUALITY_POLICY a valid override of annotation.stats.policy.Policy."""
    from annotation.quality.standing import policy

    study = settings.STEREORANK
    errors = []
    rates = ("GOLD_RATE", "CHECK_RATE", "AGREEMENT_RATE")
    for key in rates:
        if not 0 <= study[key] < 1:
            errors.append(Error(f"STEREORANK['{key}'] must be in [0, 1), not {study[key]}"))
    if sum(study[key] for key in rates) >= 1:
        errors.append(Error("STEREORANK's GOLD_RATE, CHECK_RATE and AGREEMENT_RATE add up to 1+"))
    adaptive = study["ADAPTIVE_OVERLAP"]
    if not 0 <= adaptive["CUT"] <= 1 or adaptive["CAP"] < 0:
        errors.append(Error("STEREORANK['ADAPTIVE_OVERLAP']: CUT in [0, 1] and CAP >= 0"))
    sampler = study["SAMPLER"]
    if sampler["EVERY"] < 0 or sampler["BATCH"] < 1 or not sampler["PRIOR"] > 0:
        errors.append(Error("STEREORANK['SAMPLER']: EVERY >= 0, BATCH >= 1 and PRIOR > 0"))
    if not 0 <= sampler["EXPLORATION"] <= 1:
        errors.append(Error("STEREORANK['SAMPLER']['EXPLORATION'] must be in [0, 1]"))
    if not 0 <= study["AGREEMENT_FRACTION"] <= 1:
        errors.append(
            Error(
                "STEREORANK['AGREEMENT_FRACTION'] must be in [0, 1], "
                f"not {study['AGREEMENT_FRACTION']}"
            )
        )
    for key in ("GROUP_K", "AGREEMENT_OVERLAP", "TASK_OVERLAP"):
        if study[key] < 1:
            errors.append(Error(f"STEREORANK['{key}'] must be at least 1, not {study[key]}"))
    if study["LABEL_WEIGHTING"] not in ("none", "reliability"):
        errors.append(
            Error(
                "STEREORANK['LABEL_WEIGHTING'] must be 'none' or 'reliability', "
                f"not {study['LABEL_WEIGHTING']!r}"
            )
        )
    if study["RELIABILITY_MIN_TASKS"] < 1:
        errors.append(Error("STEREORANK['RELIABILITY_MIN_TASKS'] must be at least 1"))
    if study["QUALITY_N_BOOT"] < 0:
        errors.append(Error("STEREORANK['QUALITY_N_BOOT'] must not be negative"))
    try:
        policy()
    except ImproperlyConfigured as error:
        errors.append(Error(str(error)))
    return errors
