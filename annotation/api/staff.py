"""Staff-only REST views of the catalogue, items, tasks, rankings and quality (read-only),
and two writes: reinstatement (an annotator back to ``ok`` with a recorded reason) and a
study's sampler.

Annotators are pseudonymous here as in the exports; demographics are only in the
exports. Each view reads only the studies the viewer has a role in (``annotation.access``):
another study's object is a 404, as one that does not exist. Every list runs a fixed
number of queries whatever its length.
"""

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import serializers, status, viewsets
from rest_framework.exceptions import ParseError
from rest_framework.permissions import IsAdminUser
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.access import roles, scope
from annotation.api.params import MAX_ID, MAX_N_BOOT, MAX_PAGE, int_param, n_boot_param
from annotation.api.participants import query_flag
from annotation.assignment import selectors as task_selectors
from annotation.models import (
    AnnotatorProfile,
    AnnotatorStatus,
    Item,
    Occupation,
    Prompt,
    PromptType,
    Ranking,
    RankingTask,
    Study,
)
from annotation.quality import standing
from annotation.quality import store as quality_store
from annotation.rankings.exports import annotator_for_pseudonym, pseudonym
from annotation.studies import lifecycle as studies
from core.api_bodies import ParsedFirst
from core.ids import ID_PATTERN


class PromptSerializer(serializers.ModelSerializer):
    class Meta:
        model = Prompt
        fields = ["id", "prompt_type", "text", "origin"]


class OccupationSerializer(serializers.ModelSerializer):
    prompts = PromptSerializer(many=True, read_only=True)

    class Meta:
        model = Occupation
        fields = ["id", "name", "slug", "prompts"]


class StaffItemSerializer(serializers.ModelSerializer):
    prompt = PromptSerializer(read_only=True)
    occupation = serializers.CharField(source="prompt.occupation.slug")
    image_url = serializers.SerializerMethodField()

    class Meta:
        model = Item
        fields = [
            "id",
            "occupation",
            "prompt",
            "image_url",
            "is_placeholder",
            "generator",
            "created_at",
        ]

    def get_image_url(self, item: Item) -> str:
        return self.context["request"].build_absolute_uri(item.image.url)


class StaffTaskSerializer(serializers.ModelSerializer):
    occupation = serializers.CharField(source="occupation.slug")
    items = serializers.SerializerMethodField()

    class Meta:
        model = RankingTask
        fields = ["id", "occupation", "items", "overlap", "ranking_count", "created_at"]

    def get_items(self, task: RankingTask) -> list[int]:
        return [link.item_id for link in task.task_items.all()]


class StaffRankingSerializer(serializers.ModelSerializer):
    annotator = serializers.SerializerMethodField(help_text="A stable pseudonym, as in exports.")
    synthetic = serializers.BooleanField(source="annotator.is_synthetic")
    occupation = serializers.CharField(source="task.occupation.slug")

    class Meta:
        model = Ranking
        fields = [
            "id",
            "task",
            "occupation",
            "annotator",
            "synthetic",
            "order",
            "shown_order",
            "seconds_spent",
            "viewport_width",
            "created_at",
        ]

    def get_annotator(self, ranking: Ranking) -> str:
        return pseudonym(ranking.annotator.user_id)


OCCUPATION = OpenApiParameter("occupation", str, description="Occupation slug or id.")
TASK = OpenApiParameter(
    "task", {"type": "integer", "minimum": 1, "maximum": MAX_ID}, description="Ranking task id."
)
PROMPT_TYPE = OpenApiParameter("prompt_type", str, enum=PromptType.values)
SYNTHETIC = OpenApiParameter("synthetic", bool, description="Only synthetic (true) or real.")


class StaffViewSet(ParsedFirst, viewsets.ReadOnlyModelViewSet):
    permission_classes = [IsAdminUser]
    lookup_value_regex = ID_PATTERN


class OccupationViewSet(StaffViewSet):
    """The catalogue: occupations with all their prompts (originals and paraphrases)."""

    serializer_class = OccupationSerializer

    def get_queryset(self) -> QuerySet:
        return task_selectors.occupations_with_prompts(self.request.user)


@extend_schema_view(list=extend_schema(parameters=[OCCUPATION, PROMPT_TYPE]))
class ItemViewSet(StaffViewSet):
    """Prompt-image pairs."""

    serializer_class = StaffItemSerializer

    def get_queryset(self) -> QuerySet:
        prompt_type = self.request.query_params.get("prompt_type")
        if prompt_type and prompt_type not in PromptType.values:
            raise ParseError(
                f"prompt_type: '{prompt_type}' is not one of {', '.join(PromptType.values)}."
            )
        occupation = self.request.query_params.get("occupation")
        return task_selectors.items(self.request.user, occupation, prompt_type)


@extend_schema_view(list=extend_schema(parameters=[OCCUPATION]))
class TaskViewSet(StaffViewSet):
    """Ranking tasks: their item ids, overlap and how many rankings they hold."""

    serializer_class = StaffTaskSerializer

    def get_queryset(self) -> QuerySet:
        return task_selectors.tasks(self.request.user, self.request.query_params.get("occupation"))


@extend_schema_view(list=extend_schema(parameters=[OCCUPATION, TASK, SYNTHETIC]))
class RankingViewSet(StaffViewSet):
    """Rankings with pseudonymous annotators (demographics are in the exports only)."""

    serializer_class = StaffRankingSerializer

    def get_queryset(self) -> QuerySet:
        return task_selectors.rankings(
            self.request.user,
            self.request.query_params.get("occupation"),
            int_param(self.request, "task"),
            query_flag(self.request, "synthetic"),
        )


class EstimateSerializer(serializers.Serializer):
    value = serializers.FloatField(allow_null=True)
    ci_low = serializers.FloatField(allow_null=True)
    ci_high = serializers.FloatField(allow_null=True)
    n = serializers.IntegerField(help_text="Clusters (tasks) the figure rests on.")
    n_boot = serializers.IntegerField()


class AgreementSerializer(serializers.Serializer):
    n_tasks = serializers.IntegerField()
    n_rankings = serializers.IntegerField()
    n_annotators = serializers.IntegerField()
    kendall_w = EstimateSerializer()
    alpha_ordinal = EstimateSerializer()
    alpha_interval = EstimateSerializer()


class BreakdownSerializer(serializers.Serializer):
    overall = AgreementSerializer()
    per_occupation = serializers.DictField(child=AgreementSerializer())
    within_groups = serializers.DictField(
        child=serializers.DictField(),
        help_text="{field: {group: agreement}}: groups of k or more annotators only.",
    )
    hidden_groups = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="{field: how many groups of fewer than k annotators were hidden}.",
    )
    between_groups = serializers.DictField(help_text="{field: {field, groups, agreement}}")
    k = serializers.IntegerField(help_text="Groups with fewer annotators are hidden.")


class AnnotatorQualitySerializer(serializers.Serializer):
    pseudonym = serializers.CharField()
    profile = serializers.IntegerField()
    tasks = serializers.IntegerField()
    gold_tasks = serializers.IntegerField()
    gold_score = serializers.FloatField(allow_null=True)
    checks = serializers.IntegerField()
    check_pass_rate = serializers.FloatField(allow_null=True)
    consensus_rho = serializers.FloatField(allow_null=True)
    consensus_tasks = serializers.IntegerField()
    median_seconds = serializers.FloatField(allow_null=True)
    untouched_rate = serializers.FloatField(allow_null=True)
    status = serializers.ChoiceField(AnnotatorStatus.choices)
    status_reason = serializers.CharField()
    synthetic = serializers.BooleanField()
    synthetic_kind = serializers.CharField()


class QualityReportSerializer(serializers.Serializer):
    include_synthetic = serializers.BooleanField()
    n_boot = serializers.IntegerField()
    n_rankings = serializers.IntegerField()
    agreement = BreakdownSerializer()
    position_bias = serializers.DictField(
        help_text="{K: shown x final table, chi2 test, untouched rate and binomial test, "
        "mean shown-final tau}"
    )
    annotators = AnnotatorQualitySerializer(
        many=True, help_text="One page of the annotator table, in pseudonym order."
    )
    annotators_page = serializers.IntegerField(help_text="The page shown (the last if past it).")
    annotators_pages = serializers.IntegerField()
    annotators_count = serializers.IntegerField(help_text="Annotators in the whole table.")
    policy = serializers.DictField(help_text="The exclusion rule in force.")
    computed_at = serializers.DateTimeField(help_text="When the stored report was computed.")
    data_version = serializers.CharField(help_text="The version of the data it describes.")
    stale = serializers.BooleanField(
        help_text="The data changed since: a refresh is queued; ask again for the new one."
    )


class QualityView(ParsedFirst, APIView):
    """One study's (``?study=slug``, default the default one) agreement (W, alpha; per
    occupation and group), position bias, the annotator table a page at a time (``?page=``).

    Served from the stored report with the time it was computed (``computed_at``) and
    whether the data changed since (``stale``: a refresh is queued); 202 while the first
    one of its kind is computed (``annotation.quality.store``)."""

    permission_classes = [IsAdminUser]

    @extend_schema(
        parameters=[
            OpenApiParameter("study", str, description="The study's slug (default: the default)."),
            OpenApiParameter("include_synthetic", bool),
            OpenApiParameter(
                "n_boot",
                {"type": "integer", "minimum": 0, "maximum": MAX_N_BOOT},
                description="Bootstrap draws of the intervals (default: the setting).",
            ),
            OpenApiParameter(
                "page",
                {"type": "integer", "minimum": 1, "maximum": MAX_PAGE},
                description="The annotator table's page (default 1).",
            ),
        ],
        responses={200: QualityReportSerializer, 202: OpenApiTypes.OBJECT},
    )
    def get(self, request):
        n_boot = n_boot_param(request)
        page = int_param(request, "page", 1, MAX_PAGE) or 1
        synthetic = bool(query_flag(request, "include_synthetic"))
        study = scope.study_for(request.user, request.query_params.get("study"))
        served = quality_store.served_report(synthetic, n_boot, study=study)
        if served.report is None:
            detail = "The quality report is being computed; ask again shortly."
            body = {"detail": detail, **served.as_dict()}
            return Response(body, status=status.HTTP_202_ACCEPTED)
        report = served.as_dict(served.annotator_page(page))
        return Response(scope.report_for(request.user, study, report))


class ValidationReportView(ParsedFirst, APIView):
    """A validation study's report: per condition, Welch's t, paired t, Wilcoxon, the cluster
    bootstrap, effect sizes, per occupation and group, power, each annotator's means."""

    permission_classes = [IsAdminUser]

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "n_boot",
                {"type": "integer", "minimum": 0, "maximum": MAX_N_BOOT},
                description="Bootstrap draws of the intervals (default: the setting).",
            ),
        ],
        responses={200: dict},
    )
    def get(self, request, slug: str):
        n_boot = n_boot_param(request)
        from annotation.validation import (
            results as validation_results,  # scipy: not with the URL conf
        )

        study = scope.study_for(request.user, slug)
        report = validation_results.report(study, n_boot=n_boot)
        return Response(scope.report_for(request.user, study, report))


class ReinstateSerializer(serializers.Serializer):
    reason = serializers.CharField(
        allow_blank=True, help_text="Why the annotator is reinstated: recorded with the change."
    )


class StatusChangeSerializer(serializers.Serializer):
    annotator = serializers.CharField(help_text="The annotator's pseudonym.")
    previous = serializers.ChoiceField(AnnotatorStatus.choices)
    status = serializers.ChoiceField(AnnotatorStatus.choices)
    reason = serializers.CharField()
    by = serializers.CharField(help_text="The staff member's username.")
    created_at = serializers.DateTimeField()


class ReinstateView(ParsedFirst, APIView):
    """Lift a warned or excluded annotator back to ``ok``, as the Quality dashboard does.

    400 without a reason, 404 for an unknown pseudonym, 409 when the annotator is
    neither warned nor excluded (or a concurrent change came first).
    """

    permission_classes = [IsAdminUser]

    @extend_schema(request=ReinstateSerializer, responses=StatusChangeSerializer)
    def post(self, request, name: str):
        data = ReinstateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        among = scope.in_scope(AnnotatorProfile.objects.all(), request.user, roles.RUN_STUDY)
        profile = annotator_for_pseudonym(name, among)
        change = standing.reinstate(profile, request.user, data.validated_data["reason"])
        return Response(
            StatusChangeSerializer(
                {
                    "annotator": pseudonym(profile.user_id),
                    "previous": change.previous,
                    "status": change.status,
                    "reason": change.reason,
                    "by": request.user.get_username(),
                    "created_at": change.created_at,
                }
            ).data
        )


class SamplerSerializer(serializers.Serializer):
    sampler = serializers.ChoiceField(Study.Sampler.choices)
    priorities_basis = serializers.CharField(
        read_only=True, help_text="What the current priorities rest on (active only)."
    )
    priorities_updated_at = serializers.DateTimeField(read_only=True, allow_null=True)


class SamplerView(ParsedFirst, APIView):
    """A study's sampler: ``uniform`` (the default) or ``active`` (the model's priorities,
    computed on the training side after this switch, each new version and every
    ``STEREORANK_SAMPLER_EVERY`` rankings). 404 for an unknown study, 400 for another name."""

    permission_classes = [IsAdminUser]

    @extend_schema(responses=SamplerSerializer)
    def get(self, request, slug: str):
        return Response(SamplerSerializer(scope.study_for(request.user, slug)).data)

    @extend_schema(request=SamplerSerializer, responses=SamplerSerializer)
    def put(self, request, slug: str):
        data = SamplerSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        study = scope.study_for(request.user, slug, roles.RUN_STUDY)
        study = studies.set_sampler(study, data.validated_data["sampler"])
        return Response(SamplerSerializer(study).data)
