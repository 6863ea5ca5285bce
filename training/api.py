"""Staff API for the pipeline: snapshots, runs (start, cancel), the registry (promote,
roll back, compare). Thin: every write goes through ``training.services``; a service
error is an HTTP 400 with its message."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiTypes, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.permissions import IsAdminUser
from rest_framework.response import Response
from rest_framework.views import APIView

from . import perspective_export, selectors, services
from .ml.recipes import DEFAULT_RECIPE, RECIPES
from .models import Checkpoint, DatasetSnapshot, TrainingRun
from .snapshots import WEIGHTINGS
from .steering import parse as parse_steering


class SnapshotSerializer(serializers.ModelSerializer):
    erasures_after = serializers.IntegerField(
        read_only=True,
        default=0,
        help_text="Annotators whose data were erased since this snapshot was frozen: its "
        "labels still hold their rankings (averaged); snapshots made later do not.",
    )

    class Meta:
        model = DatasetSnapshot
        fields = [
            "id",
            "created_at",
            "include_synthetic",
            "ranking_count",
            "last_ranking_id",
            "content_hash",
            "split_seed",
            "eval_fraction",
            "example_count",
            "train_count",
            "eval_count",
            "label_weighting",
            "erasures_after",
        ]


class SnapshotInSerializer(serializers.Serializer):
    include_synthetic = serializers.BooleanField(default=False)
    seed = serializers.IntegerField(default=0)
    eval_fraction = serializers.FloatField(default=0.2, min_value=0.01, max_value=0.99)
    weighting = serializers.ChoiceField(
        choices=WEIGHTINGS,
        required=False,
        help_text="How labels average rankings: none, or reliability (annotators weighted by "
        "agreement with the others). Default: STEREORANK_LABEL_WEIGHTING.",
    )


class RunSerializer(serializers.ModelSerializer):
    checkpoint = serializers.SerializerMethodField()
    progress = serializers.FloatField(read_only=True)

    class Meta:
        model = TrainingRun
        fields = [
            "id",
            "snapshot",
            "augmentation",
            "encoder",
            "hyperparameters",
            "status",
            "epoch",
            "epochs",
            "progress",
            "history",
            "error",
            "cancel_requested",
            "attempts",
            "created_at",
            "started_at",
            "finished_at",
            "checkpoint",
        ]

    def get_checkpoint(self, run: TrainingRun) -> int | None:
        checkpoint = getattr(run, "checkpoint", None)
        return checkpoint.version if checkpoint else None


class RunInSerializer(serializers.Serializer):
    snapshot = serializers.PrimaryKeyRelatedField(queryset=selectors.snapshot_choices())
    encoder = serializers.CharField(required=False, allow_blank=True)
    epochs = serializers.IntegerField(required=False, min_value=1)
    recipe = serializers.ChoiceField(
        choices=list(RECIPES),
        required=False,
        help_text=f"Hyper-parameters to start from (default {DEFAULT_RECIPE}); "
        "seed: the model card's (lr 1e-5).",
    )
    paraphrases = serializers.IntegerField(default=0, min_value=0, max_value=50)
    hyperparameters = serializers.DictField(required=False)
    steer = serializers.CharField(
        required=False, allow_blank=True, help_text="FIELD=VALUE: train on that group's labels."
    )
    balance = serializers.CharField(
        required=False, allow_blank=True, help_text="FIELD: every group of it weighs the same."
    )


class CheckpointSerializer(serializers.ModelSerializer):
    parent = serializers.SlugRelatedField(slug_field="version", read_only=True)

    class Meta:
        model = Checkpoint
        fields = [
            "version",
            "status",
            "run",
            "parent",
            "snapshot",
            "encoder_name",
            "head_sha256",
            "hyperparameters",
            "data_hash",
            "code_version",
            "threshold",
            "threshold_basis",
            "metrics",
            "source",
            "created_at",
        ]


class ReasonSerializer(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, default="")


class CompareSerializer(serializers.Serializer):
    a = serializers.IntegerField()
    b = serializers.IntegerField()
    snapshot = serializers.PrimaryKeyRelatedField(
        queryset=selectors.snapshot_choices(), required=False
    )


class StaffView(APIView):
    permission_classes = [IsAdminUser]


class SnapshotsView(StaffView):
    @extend_schema(responses=SnapshotSerializer(many=True), operation_id="training_snapshots_list")
    def get(self, request):
        return Response(SnapshotSerializer(selectors.snapshots()[:100], many=True).data)

    @extend_schema(request=SnapshotInSerializer, responses={201: SnapshotSerializer})
    def post(self, request):
        data = SnapshotInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        snap = services.create_snapshot(user=request.user, **data.validated_data)
        return Response(SnapshotSerializer(snap).data, status=status.HTTP_201_CREATED)


class RunsView(StaffView):
    @extend_schema(responses=RunSerializer(many=True), operation_id="training_runs_list")
    def get(self, request):
        return Response(RunSerializer(selectors.runs()[:100], many=True).data)

    @extend_schema(request=RunInSerializer, responses={201: RunSerializer})
    def post(self, request):
        data = RunInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        run = services.start_run(
            v["snapshot"],
            encoder=v.get("encoder") or None,
            epochs=v.get("epochs"),
            recipe=v.get("recipe"),
            paraphrases=v["paraphrases"],
            hyperparameters=v.get("hyperparameters"),
            steering=parse_steering(v.get("steer"), v.get("balance")),
            user=request.user,
        )
        return Response(RunSerializer(run).data, status=status.HTTP_201_CREATED)


class RunView(StaffView):
    @extend_schema(responses=RunSerializer, operation_id="training_run_detail")
    def get(self, request, run_id: int):
        run = selectors.runs().filter(pk=run_id).first()
        if run is None:
            return Response({"detail": f"there is no run {run_id}"}, status=404)
        return Response(RunSerializer(run).data)


class CancelRunView(StaffView):
    @extend_schema(request=None, responses=RunSerializer)
    def post(self, request, run_id: int):
        run = selectors.run(run_id)
        if run is None:
            return Response({"detail": f"there is no run {run_id}"}, status=404)
        run = services.cancel_run(run, user=request.user)
        return Response(RunSerializer(run).data)


class CheckpointsView(StaffView):
    @extend_schema(responses=CheckpointSerializer(many=True))
    def get(self, request):
        return Response(CheckpointSerializer(selectors.lineage(), many=True).data)


class PromoteView(StaffView):
    @extend_schema(request=ReasonSerializer, responses=CheckpointSerializer)
    def post(self, request, version: int):
        data = ReasonSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        checkpoint = services.promote(
            services.get_version(version), user=request.user, **data.validated_data
        )
        return Response(CheckpointSerializer(checkpoint).data)


class RollbackView(StaffView):
    @extend_schema(request=ReasonSerializer, responses=CheckpointSerializer)
    def post(self, request):
        data = ReasonSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        checkpoint = services.rollback(user=request.user, **data.validated_data)
        return Response(CheckpointSerializer(checkpoint).data)


class CompareView(StaffView):
    @extend_schema(
        parameters=[CompareSerializer],
        responses={200: OpenApiTypes.OBJECT, 202: OpenApiTypes.OBJECT},
        description=(
            "The paired comparison of versions a and b. With a snapshot on which either is "
            "not evaluated yet, the evaluations are queued on the gpu worker and the answer "
            "is 202 with the pending versions: ask again shortly."
        ),
    )
    def get(self, request):
        data = CompareSerializer(data=request.query_params)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        a, b = services.get_version(v["a"]), services.get_version(v["b"])
        snapshot = v.get("snapshot")
        missing = selectors.not_evaluated_on(snapshot, a, b) if snapshot else []
        if missing:
            services.request_evaluations(snapshot, missing)
            pending = [c.version for c in missing]
            return Response({"pending": pending, "snapshot": snapshot.pk}, status=202)
        return Response(services.compare(a, b, snapshot=snapshot))


class PerspectivesQuerySerializer(serializers.Serializer):
    snapshot = serializers.PrimaryKeyRelatedField(
        queryset=selectors.snapshot_choices(), required=False
    )
    field = serializers.ListField(
        child=serializers.CharField(min_length=1), required=False, help_text="Demographic field(s)."
    )
    format = serializers.ChoiceField(["json", "csv"], default="json")


def _interval() -> serializers.ListField:
    """A 95% interval [low, high], or null where none could be computed."""
    return serializers.ListField(child=serializers.FloatField(), allow_null=True)


class GroupFiguresSerializer(serializers.Serializer):
    """One group's figures (training.ml.alignment_report.GroupPerspective, without per-prompt)."""

    group = serializers.CharField()
    status = serializers.CharField()
    alignment = serializers.FloatField()
    alignment_ci = _interval()
    human_baseline = serializers.FloatField(allow_null=True)
    human_baseline_ci = _interval()
    spearman = serializers.FloatField(allow_null=True)
    spearman_ci = _interval()
    first_choice_js = serializers.FloatField(allow_null=True)
    first_choice_js_ci = _interval()
    n_annotators = serializers.IntegerField()
    n_rankings = serializers.IntegerField()
    n_prompts = serializers.IntegerField()
    n_placements = serializers.IntegerField()
    baseline_annotators = serializers.IntegerField()
    baseline_rankings = serializers.IntegerField()
    baseline_prompts = serializers.IntegerField()
    n_items = serializers.IntegerField()
    n_occupations = serializers.IntegerField()
    per_occupation = serializers.DictField(child=serializers.FloatField(allow_null=True))


class FieldReportSerializer(serializers.Serializer):
    field = serializers.CharField()
    temperature = serializers.FloatField()
    k = serializers.IntegerField()
    n_boot = serializers.IntegerField()
    seed = serializers.IntegerField()
    n_rankings = serializers.IntegerField()
    n_annotators = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    groups = GroupFiguresSerializer(many=True)
    fewer_than_k = serializers.ListField(child=serializers.CharField())
    friedman = serializers.DictField(allow_null=True)
    divergence = serializers.ListField(child=serializers.DictField())


class PerspectivesSerializer(serializers.Serializer):
    version = serializers.IntegerField()
    snapshot = serializers.IntegerField()
    fields = FieldReportSerializer(many=True)


class PerspectivesView(StaffView):
    @extend_schema(
        parameters=[PerspectivesQuerySerializer],
        responses={
            200: PerspectivesSerializer,
            202: inline_serializer(
                "PerspectivesPending",
                {
                    "pending": serializers.ListField(child=serializers.CharField()),
                    "version": serializers.IntegerField(),
                    "snapshot": serializers.IntegerField(),
                },
            ),
            (200, "text/csv"): OpenApiTypes.STR,
        },
        description=(
            "Whose opinions the version rewards: per demographic group, alignment and "
            "Spearman's rho with 95% intervals beside the human baseline, on its own "
            "snapshot or ``?snapshot=``. Groups under k are named only. Reports not stored "
            "yet are queued on the gpu worker and the answer is 202 with the pending fields: "
            "ask again shortly. ``?format=csv``: one row per group."
        ),
    )
    def get(self, request, version: int):
        data = PerspectivesQuerySerializer(data=request.query_params)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        checkpoint = services.get_version(version)
        snapshot = services.report_snapshot(checkpoint, v.get("snapshot"))
        fields = services.report_fields(snapshot, v.get("field") or None)
        missing = selectors.perspectives_missing(checkpoint, snapshot, fields)
        if missing:
            services.request_reports(checkpoint, snapshot, missing)
            pending = {"pending": missing, "version": version, "snapshot": snapshot.pk}
            return Response(pending, status=status.HTTP_202_ACCEPTED)
        report = perspective_export.report(checkpoint, snapshot, fields)
        if v["format"] == "csv":
            body = perspective_export.to_csv(perspective_export.csv_rows(report))
            response = HttpResponse(body, content_type="text/csv")
            name = f"perspectives-v{version}-snapshot{snapshot.pk}.csv"
            response["Content-Disposition"] = f'attachment; filename="{name}"'
            return response
        return Response(report)
