"""``POST /api/score/`` and ``POST /api/optimise/``: the reward model for the scoring role.

Thin views: the body goes to ``scoring.services`` as it came, which checks it
(limits from ``STEREORANK["SCORING"]``) and refuses with a message naming the
part that is wrong (400). Clients authenticate with an API token (or the
checker page's session), must be in the scoring role (403 otherwise) and are
throttled per user (scope ``scoring``). The serializers document the schema.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api_bodies import ParsedFirst
from core.throttling import ScopedRateThrottle
from scoring import services
from scoring.errors import ScoringError
from scoring.roles import HasScoringRole


class Score(serializers.Serializer):
    """The request body of /api/score/ (component ScoreRequest)."""

    prompts = serializers.ListField(
        child=serializers.CharField(), help_text="1 to MAX_PROMPTS (256) prompts, 1,000 chars each."
    )
    version = serializers.IntegerField(
        required=False, help_text="A registry version; default: the active one."
    )
    group = serializers.CharField(
        required=False,
        help_text="FIELD:VALUE (age_band:45-54): that group's head answers; the version must "
        "have one for a group of k or more annotators. Default: the pooled head.",
    )


class ScoredPrompt(serializers.Serializer):
    prompt = serializers.CharField()
    score = serializers.FloatField(help_text="Higher is more diverse.")
    flagged = serializers.BooleanField(help_text="score < threshold: stereotypical.")


class ScoredWithSpread(ScoredPrompt):
    disagreement = serializers.FloatField(
        allow_null=True,
        help_text="Predicted spread of people's scores for the prompt (the annotator-weighted "
        "SD of the group heads); null for a version without group heads.",
    )
    contested = serializers.BooleanField(
        allow_null=True,
        help_text="disagreement > disagreement_threshold: people disagree about this prompt.",
    )


class ServedEncoder(serializers.Serializer):
    backend = serializers.CharField(help_text="torch (fp32 as trained), onnx or openvino.")
    quantization = serializers.CharField(help_text="none or int8.")
    gate = serializers.IntegerField(
        allow_null=True, help_text="The accuracy gate that let this copy serve; null for fp32."
    )
    fallback = serializers.BooleanField(
        help_text="fp32 served because the configured copy is not gated (staff's choice)."
    )


class ScoreResponse(serializers.Serializer):
    version = serializers.IntegerField()
    threshold = serializers.FloatField()
    threshold_basis = serializers.CharField(help_text="How the threshold was set.")
    encoder = ServedEncoder(help_text="The encoder that served these scores.")
    group = serializers.CharField(
        allow_null=True, help_text="FIELD:VALUE whose head answered; null: the pooled head."
    )
    disagreement_threshold = serializers.FloatField(
        allow_null=True, help_text="Calibrated with the group heads; null without them."
    )
    results = ScoredWithSpread(many=True)
    scale = serializers.ListField(
        child=serializers.FloatField(),
        min_length=2,
        max_length=2,
        allow_null=True,
        help_text="[lowest, highest] of this version's scores on its snapshot's prompts (the "
        "packaged catalogue's, for a version never evaluated): one scale for every batch.",
    )


class Optimise(serializers.Serializer):
    """The request body of /api/optimise/ (component OptimiseRequest)."""

    prompt = serializers.CharField()
    n = serializers.IntegerField(required=False, default=3, help_text="Rewrites wanted (1-10).")
    occupation = serializers.CharField(
        required=False, help_text="Default: the catalogue occupation the prompt names."
    )
    version = serializers.IntegerField(required=False)


class Candidate(ScoredPrompt):
    gain = serializers.FloatField(help_text="score - the original's score.")
    aspects = serializers.ListField(child=serializers.CharField())


class OptimiseResponse(serializers.Serializer):
    version = serializers.IntegerField()
    threshold = serializers.FloatField()
    threshold_basis = serializers.CharField()
    encoder = ServedEncoder(help_text="The encoder that served these scores.")
    occupation = serializers.CharField()
    rewriter = serializers.CharField()
    original = ScoredWithSpread()
    reached = serializers.BooleanField(help_text="A returned prompt passes the threshold.")
    candidates = Candidate(many=True, help_text="Passing rewrites, best first.")
    best = Candidate(allow_null=True, help_text="The best rewrite, passing or not.")
    rounds = serializers.IntegerField()
    tried = serializers.IntegerField()
    lost_occupation = serializers.IntegerField()


def body(request: Request) -> dict:
    if not isinstance(request.data, dict):
        raise ScoringError("the body must be a JSON object")
    return request.data


class ScoringView(ParsedFirst, APIView):
    permission_classes = [HasScoringRole]
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "scoring"


class ScoreView(ScoringView):
    @extend_schema(request=Score, responses=ScoreResponse, operation_id="score_prompts")
    def post(self, request: Request) -> Response:
        """Score prompts with the active version (or ``version``); flag those below its
        threshold."""
        data = body(request)
        return Response(
            score_body(
                services.score_prompts(data.get("prompts"), data.get("version"), data.get("group"))
            )
        )


def score_body(report: services.ScoreReport) -> dict:
    """The scores as the API gives them (the command's ``--json`` too)."""
    return {
        "version": report.version,
        "threshold": report.threshold,
        "threshold_basis": report.threshold_basis,
        "encoder": report.encoder.to_dict(),
        "group": report.group,
        "disagreement_threshold": report.disagreement_threshold,
        "results": [
            {
                "prompt": r.prompt,
                "score": r.score,
                "flagged": r.flagged,
                "disagreement": r.disagreement,
                "contested": r.contested,
            }
            for r in report.results
        ],
        "scale": list(report.scale) if report.scale else None,
    }


def candidate(scored) -> dict:
    return {
        "prompt": scored.text,
        "score": scored.score,
        "flagged": scored.flagged,
        "gain": scored.gain,
        "aspects": list(scored.aspects),
    }


class OptimiseView(ScoringView):
    @extend_schema(request=Optimise, responses=OptimiseResponse, operation_id="optimise_prompt")
    def post(self, request: Request) -> Response:
        """Rewrites of a prompt that keep its occupation and pass the threshold (DJ-PO)."""
        data = body(request)
        report = services.optimise_prompt(
            data.get("prompt"), data.get("n", 3), data.get("occupation"), data.get("version")
        )
        return Response(optimise_body(report))


def optimise_body(report: services.OptimiseReport) -> dict:
    """The optimiser's answer as the API gives it (the command's ``--json`` too)."""
    result = report.result
    return {
        "version": report.version,
        "threshold": report.threshold,
        "threshold_basis": report.threshold_basis,
        "encoder": report.encoder.to_dict(),
        "occupation": report.occupation,
        "rewriter": report.rewriter,
        "original": {
            "prompt": result.original.text,
            "score": result.original.score,
            "flagged": result.original.flagged,
            "disagreement": report.disagreement,
            "contested": report.contested,
        },
        "reached": result.reached,
        "candidates": [candidate(c) for c in result.candidates if c.round > 0],
        "best": candidate(result.best) if result.best else None,
        "rounds": result.rounds,
        "tried": result.tried,
        "lost_occupation": result.lost_occupation,
    }
