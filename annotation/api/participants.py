"""The participants' REST API (and the staff's exports): thin DRF views over
``annotation.participants.services``, ``annotation.assignment.next_task``, the selectors
and ``annotation.rankings.exports``."""

from collections.abc import Iterator

from django.http import StreamingHttpResponse
from django.utils.translation import gettext
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
    extend_schema_field,
    extend_schema_view,
    inline_serializer,
)
from rest_framework import serializers, status
from rest_framework.exceptions import ParseError
from rest_framework.permissions import IsAdminUser
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.access import log as access_log
from annotation.access import roles, scope
from annotation.api.language import InTheirLanguage
from annotation.assignment import blinding
from annotation.assignment import next_task as assignment
from annotation.assignment import selectors as task_selectors
from annotation.errors import ConsentRequired
from annotation.models import DemographicField, Item, Study
from annotation.models.studies import Erasure
from annotation.participants import services
from annotation.participants.erasure import erase_annotator
from annotation.rankings import selectors
from annotation.rankings.exports import csv_lines, jsonl_lines, pair_rows, ranking_rows
from annotation.stats import tiers
from core.api_bodies import ParsedFirst
from core.throttling import ScopedRateThrottle


class ItemSerializer(serializers.Serializer):
    """One card (``task_selectors.Card``): an attention-check card's prompt is its instruction.
    On a blinded task (a validation study's) ``id`` and ``image_url`` are the participant's
    own opaque names for the card (``annotation.assignment.blinding``)."""

    id = serializers.IntegerField(
        source="name", help_text="The id to rank the card by: the item's, or its blinded name."
    )
    prompt = serializers.CharField(source="text")
    image_url = serializers.SerializerMethodField()

    def get_image_url(self, card: task_selectors.Card) -> str:
        return self.context["request"].build_absolute_uri(card.src)


class TaskSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="task.id")
    occupation = serializers.CharField(source="task.occupation.name")
    items = serializers.SerializerMethodField()
    reserved_until = serializers.DateTimeField()

    def get_items(self, reservation) -> list[dict]:
        return ItemSerializer(
            task_selectors.shown_cards(reservation), many=True, context=self.context
        ).data


@extend_schema_field(
    {"type": "array", "items": {"type": "integer"}, "minItems": 1, "uniqueItems": True}
)
class OrderField(serializers.JSONField):
    """Any JSON, checked by annotation.rankings.tiers.validate (a permutation of the task's
    items, with its own message); documented as what it must be: a list of item ids."""


@extend_schema_field(
    {
        "type": "array",
        "minItems": 1,
        "items": {"type": "array", "items": {"type": "integer"}, "minItems": 1},
    }
)
class TiersField(serializers.JSONField):
    """Any JSON, checked by annotation.rankings.tiers.validate (each of the task's items in
    exactly one tier, and the study's format's rule); documented as lists of item ids."""


class RankingInSerializer(serializers.Serializer):
    order = OrderField(
        required=False, help_text="Item ids, most to least stereotypical (a strict order)."
    )
    tiers = TiersField(
        required=False,
        help_text="Or: lists of item ids judged equal, most to least stereotypical, as the "
        "study's question_format asks (rank_ties, top_k, best_worst, pairwise).",
    )
    seconds_spent = serializers.FloatField(required=False, allow_null=True, min_value=0)
    viewport_width = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=services.MAX_VIEWPORT_WIDTH,
        help_text="The window's width in CSS pixels when the order was made, if known.",
    )

    def validate(self, data):
        if "order" not in data and "tiers" not in data:  # DRF's own words, translated
            raise serializers.ValidationError(
                {"order": self.fields["order"].error_messages["required"]}
            )
        if "order" in data and "tiers" in data:
            raise serializers.ValidationError(gettext("Send either an order or tiers, not both."))
        return data

    @property
    def answer(self):
        return self.validated_data.get("order", self.validated_data.get("tiers"))


class RankingOutSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    task = serializers.IntegerField(source="task_id")
    order = serializers.JSONField()
    tiers = serializers.SerializerMethodField()
    shown_order = serializers.JSONField()
    created_at = serializers.DateTimeField()

    @extend_schema_field(TiersField)
    def get_tiers(self, ranking) -> list[list[int]]:
        return [list(t) for t in tiers.of_ranking(ranking.order, ranking.tiers)]


def query_flag(request, name: str) -> bool | None:
    """A true/false query parameter; None when absent, a 400 when it is neither (or empty)."""
    raw = request.query_params.get(name)
    if raw is None:
        return None
    if raw.lower() in {"1", "true", "yes"}:
        return True
    if raw.lower() in {"0", "false", "no"}:
        return False
    raise ParseError(
        gettext("%(name)s: '%(value)s' is not true or false.") % {"name": name, "value": raw}
    )


class NextTaskView(ParsedFirst, InTheirLanguage, APIView):
    @extend_schema(request=None, responses={200: TaskSerializer, 204: None})
    def post(self, request):
        profile = services.get_profile(request.user)
        reservation = assignment.next_task(profile)
        if reservation is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(TaskSerializer(reservation, context={"request": request}).data)


class SubmitRankingView(ParsedFirst, InTheirLanguage, APIView):
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "submit"

    @extend_schema(
        request=RankingInSerializer,
        responses={201: RankingOutSerializer, 200: RankingOutSerializer},
    )
    def post(self, request, task_id: int):
        data = RankingInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        profile = services.get_profile(request.user)
        ranking, created = services.submit_ranking(
            profile,
            task_id,
            data.answer,
            data.validated_data.get("seconds_spent"),
            data.validated_data.get("viewport_width"),
            getattr(profile, "portal_language", None),  # read with the token (accounts.tokens)
        )
        out = RankingOutSerializer(ranking).data
        if blinding.blinded(ranking.task):  # the order as the participant named the cards
            out["order"] = blinding.names(ranking.task, profile.pk, ranking.order)
            out["shown_order"] = blinding.names(ranking.task, profile.pk, ranking.shown_order)
            out["tiers"] = [[name] for name in out["order"]]  # a validation study: strict
        return Response(out, status=201 if created else 200)


class MeView(ParsedFirst, InTheirLanguage, APIView):
    @extend_schema(
        responses=inline_serializer(
            "Me",
            {
                "username": serializers.CharField(),
                "consent": serializers.BooleanField(),
                "demographics": serializers.DictField(),
                "progress": serializers.DictField(),
            },
        )
    )
    def get(self, request):
        profile = services.get_profile(request.user)
        return Response(
            {
                "username": request.user.username,
                "consent": selectors.has_consent(profile),
                "demographics": profile.demographics,
                "progress": selectors.progress(profile),
            }
        )


class DemographicQuestionSerializer(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()
    help_text = serializers.CharField()
    choices = serializers.ListField(child=serializers.CharField())
    allow_other = serializers.BooleanField(
        help_text="An answer in the annotator's own words is accepted besides the choices."
    )


class DemographicsSerializer(serializers.Serializer):
    demographics = serializers.DictField(
        child=serializers.CharField(allow_blank=True, max_length=services.MAX_ANSWER_LENGTH),
        help_text="Answers by question key; every one optional, "
        f"'{DemographicField.PREFER_NOT_TO_SAY}' always accepted, blank removes an answer.",
    )


class DemographicsOutSerializer(DemographicsSerializer):
    questions = DemographicQuestionSerializer(many=True, read_only=True)


class MyDemographicsView(ParsedFirst, InTheirLanguage, APIView):
    """The annotator's own demographics: read, replace (PUT) or change some (PATCH)."""

    def _answer(self, profile) -> Response:
        questions = selectors.demographic_questions()
        data = {"demographics": profile.demographics, "questions": questions}
        return Response(DemographicsOutSerializer(data).data)

    @extend_schema(responses=DemographicsOutSerializer)
    def get(self, request):
        return self._answer(services.get_profile(request.user))

    def _save(self, request, merge: bool) -> Response:
        data = DemographicsSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        profile = services.get_profile(request.user)
        if not selectors.has_consent(profile):
            raise ConsentRequired(gettext("Agree to the current consent text before answering."))
        services.save_demographics(profile, data.validated_data["demographics"], merge=merge)
        return self._answer(profile)

    @extend_schema(request=DemographicsSerializer, responses=DemographicsOutSerializer)
    def put(self, request):
        return self._save(request, merge=False)

    @extend_schema(request=DemographicsSerializer, responses=DemographicsOutSerializer)
    def patch(self, request):
        return self._save(request, merge=True)


class ConsentView(ParsedFirst, InTheirLanguage, APIView):
    @extend_schema(request=None, responses={201: None})
    def post(self, request):
        services.give_consent(services.get_profile(request.user))
        return Response({"consent": True}, status=201)

    @extend_schema(request=None, responses={204: None})
    def delete(self, request):
        services.withdraw_consent(services.get_profile(request.user))
        return Response(status=204)


class ErasureView(ParsedFirst, InTheirLanguage, APIView):
    """Withdraw and erase: demographics, external ids and rankings deleted, account closed."""

    @extend_schema(request=None, responses={204: None})
    def post(self, request):
        erase_annotator(services.get_profile(request.user), via=Erasure.Via.PARTICIPANT)
        return Response(status=204)


FORMAT = OpenApiParameter("format", str, enum=["jsonl", "csv"])
SYNTHETIC = OpenApiParameter("include_synthetic", bool)
LEFT_OUT = OpenApiParameter(
    "include_left_out",
    bool,
    description="Also gold tasks' and excluded annotators' rankings (flagged), for audits.",
)
KEEP_IDENTICAL = OpenApiParameter(
    "keep_identical_texts",
    bool,
    description="Keep pairs whose chosen and rejected prompt texts are the same (left out "
    "by default: two images of one prompt teach a text reward model nothing).",
)
LINES = {(200, "application/jsonl"): OpenApiTypes.STR}
STUDY = OpenApiParameter("study", str, description="The study's slug (default: the default study).")


@extend_schema_view(
    get=extend_schema(
        parameters=[FORMAT, SYNTHETIC, LEFT_OUT, STUDY],
        responses={**LINES, (200, "text/csv"): OpenApiTypes.STR},
    )
)
class ExportView(ParsedFirst, APIView):
    """Staff only: one study's pseudonymous rows, streamed; with demographics for a member
    who holds the demographics permission (``annotation.access``). Each export is logged."""

    permission_classes = [IsAdminUser]
    formats = {"jsonl": (jsonl_lines, "application/jsonl"), "csv": (csv_lines, "text/csv")}
    kind = "rankings"

    def rows(self, request, synthetic: bool, study: Study, demographics: bool) -> Iterator[dict]:
        left_out = bool(query_flag(request, "include_left_out"))
        return ranking_rows(synthetic, left_out, study, demographics=demographics)

    def get(self, request):
        fmt = request.query_params.get("format", "jsonl")
        if fmt not in self.formats:
            return Response(
                {"detail": f"Unknown format '{fmt}': use one of {', '.join(self.formats)}."},
                status=400,
            )
        synthetic = bool(query_flag(request, "include_synthetic"))
        study = scope.study_for(request.user, request.query_params.get("study"), roles.VIEW_DATA)
        demographics = scope.may(request.user, roles.VIEW_DEMOGRAPHICS, study)
        render, content_type = self.formats[fmt]
        rows = self.rows(request, synthetic, study, demographics)
        with_or_not = "with" if demographics else "without"
        what = f"{self.kind} export ({fmt}, {with_or_not} demographics)"
        access_log.record(
            request.user, study, access_log.Surface.API, access_log.Action.EXPORT, what
        )
        return StreamingHttpResponse(render(rows), content_type=content_type)


@extend_schema_view(
    get=extend_schema(
        parameters=[
            OpenApiParameter("format", str, enum=["jsonl"]),
            SYNTHETIC,
            KEEP_IDENTICAL,
            STUDY,
            # Pairs never include gold tasks or excluded annotators: not inherited.
            OpenApiParameter("include_left_out", exclude=True),
        ],
        responses=LINES,
    )
)
class PairsExportView(ExportView):
    """Staff only: chosen/rejected pairs with ``margin``, ready for TRL's RewardTrainer."""

    formats = {"jsonl": ExportView.formats["jsonl"]}
    kind = "pairs"

    def rows(self, request, synthetic: bool, study: Study, demographics: bool) -> Iterator[dict]:
        storage = Item._meta.get_field("image").storage
        return pair_rows(
            synthetic,
            keep_identical_texts=bool(query_flag(request, "keep_identical_texts")),
            image_url=lambda name: request.build_absolute_uri(storage.url(name)),
            study=study,
            demographics=demographics,
        )
