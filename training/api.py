"""Staff API for the pipeline: snapshots, runs (start, cancel), the registry (promote,
roll back, compare). Thin: every write goes through ``training.services``; a service
error is an HTTP 400 with its message."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiTypes, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAdminUser
from rest_framework.response import Response
from rest_framework.views import APIView

from . import selectors, services
from .models import Checkpoint, DatasetSnapshot, TrainingRun


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
            "erasures_after",
        ]


class SnapshotInSerializer(serializers.Serializer):
    include_synthetic = serializers.BooleanField(default=False)
    seed = serializers.IntegerField(default=0)
    eval_fraction = serializers.FloatField(default=0.2, min_value=0.01, max_value=0.99)


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
    snapshot = serializers.PrimaryKeyRelatedField(queryset=DatasetSnapshot.objects.all())
    encoder = serializers.CharField(required=False, allow_blank=True)
    epochs = serializers.IntegerField(required=False, min_value=1)
    paraphrases = serializers.IntegerField(default=0, min_value=0, max_value=50)
    hyperparameters = serializers.DictField(required=False)


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
        queryset=DatasetSnapshot.objects.all(), required=False
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
            paraphrases=v["paraphrases"],
            hyperparameters=v.get("hyperparameters"),
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
        run = TrainingRun.objects.filter(pk=run_id).first()
        if run is None:
            return Response({"detail": f"there is no run {run_id}"}, status=404)
        run = services.cancel_run(run, user=request.user)
        return Response(RunSerializer(run).data)


class CheckpointsView(StaffView):
    @extend_schema(responses=CheckpointSerializer(many=True))
    def get(self, request):
        qs = Checkpoint.objects.select_related("parent")
        return Response(CheckpointSerializer(qs, many=True).data)


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
