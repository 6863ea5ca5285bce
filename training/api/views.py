"""Staff API for the pipeline: snapshots, runs (start, cancel), the registry (promote,
roll back, compare, model cards). Thin: every write goes through ``training.services``;
a service error is an HTTP 400 with its message. Each view reads only what the viewer
may see (``training.access``: a snapshot's whole lineage); another's is a 404.
Past 400 lines because one staff API keeps each serializer beside the views that use it."""

from __future__ import annotations

from django.db.models import QuerySet
from django.http import HttpResponse
from drf_spectacular.utils import OpenApiTypes, extend_schema, extend_schema_view, inline_serializer
from rest_framework import serializers, status
from rest_framework.permissions import IsAdminUser
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.access import roles, scope
from annotation.errors import NotVisible, RoleRefused
from core.api_bodies import ParsedFirst
from training import selectors, services
from training.errors import RegistryError
from training.ml.recipes import DEFAULT_RECIPE, RECIPES
from training.models import Checkpoint, DatasetSnapshot, TrainingRun
from training.perspectives import export as perspective_export
from training.snapshots.services import WEIGHTINGS
from training.snapshots.steering import parse as parse_steering

# Bounds of the numbers a request may carry: a version or seed is stored in a 32-bit
# column, which a bigger number would overflow into a 500 (a 400 names the range).
MAX_VERSION = 2**31 - 1
MAX_EPOCHS = 1000


class SnapshotSerializer(serializers.ModelSerializer):
    erasures_after = serializers.IntegerField(
        read_only=True,
        default=0,
        help_text="Annotators whose data were erased since this snapshot was frozen: its "
        "labels still hold their rankings (averaged); snapshots made later do not.",
    )

    studies = serializers.SlugRelatedField(
        slug_field="slug", many=True, read_only=True, help_text="Whose rankings it froze."
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
            "studies",
            "group_k",
            "erasures_after",
        ]


class SnapshotInSerializer(serializers.Serializer):
    studies = serializers.ListField(
        child=serializers.SlugField(),
        required=False,
        help_text="Slugs of the collection studies to freeze (default: the default study).",
    )
    include_synthetic = serializers.BooleanField(default=False)
    seed = serializers.IntegerField(default=0, min_value=0, max_value=MAX_VERSION)
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
            "search",
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


class VisibleSnapshotField(serializers.PrimaryKeyRelatedField):
    """A snapshot id the requesting viewer may ``capability`` on; another's reads as one
    that does not exist."""

    def __init__(self, capability: str = roles.VIEW_DATA, **kwargs):
        self.capability = capability
        super().__init__(queryset=DatasetSnapshot.objects.none(), **kwargs)

    def get_queryset(self):
        return selectors.snapshot_choices(self.context["request"].user, self.capability)


class RunInSerializer(serializers.Serializer):
    snapshot = VisibleSnapshotField(roles.RUN_STUDY)
    encoder = serializers.CharField(required=False, allow_blank=True)
    epochs = serializers.IntegerField(required=False, min_value=1, max_value=MAX_EPOCHS)
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
    groups = serializers.CharField(
        required=False,
        allow_blank=True,
        help_text="FIELD: also a head per group of it (k or more annotators); excludes steer "
        "and balance.",
    )
    search = serializers.JSONField(
        required=False, help_text='Search the recipe first: true, "lr=1e-3,1e-2 folds=3" or {...}.'
    )


class CheckpointSerializer(serializers.ModelSerializer):
    parent = serializers.SlugRelatedField(slug_field="version", read_only=True)
    metrics = serializers.SerializerMethodField(
        help_text="Eval figures; group heads' groups of today's k or more only, as the card."
    )

    def get_metrics(self, checkpoint: Checkpoint) -> dict:
        from training.registry.card import group_heads_shown

        metrics = dict(checkpoint.metrics or {})
        if "group_heads" in metrics:
            metrics["group_heads"] = group_heads_shown(checkpoint)
        return metrics

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


class PromoteSerializer(ReasonSerializer):
    force = serializers.BooleanField(
        default=False,
        help_text="Promote past the group check (a group that clearly loses alignment); "
        "needs a reason, recorded.",
    )


class CompareSerializer(serializers.Serializer):
    a = serializers.IntegerField(min_value=1, max_value=MAX_VERSION)
    b = serializers.IntegerField(min_value=1, max_value=MAX_VERSION)
    snapshot = VisibleSnapshotField(required=False)


class StaffView(ParsedFirst, APIView):
    permission_classes = [IsAdminUser]


def _valid(serializer: type[serializers.Serializer], request, data) -> dict:
    """``data`` as ``serializer`` validates it for ``request``'s viewer; a 400 naming what
    is wrong otherwise."""
    checked = serializer(data=data, context={"request": request})
    checked.is_valid(raise_exception=True)
    return checked.validated_data


def _run(run_id: int, viewer, capability: str = roles.VIEW_DATA) -> TrainingRun:
    """Run ``run_id`` with its checkpoint and augmentation; a 404 where there is none
    ``viewer`` may ``capability`` on."""
    run = selectors.run(run_id, viewer, capability)
    if run is None:
        raise NotVisible()
    return run


def _version(version: int, viewer, capability: str = roles.VIEW_DATA) -> Checkpoint:
    """Version ``version``; a 404 where there is none ``viewer`` may ``capability`` on."""
    checkpoint = selectors.checkpoint(version, viewer, capability)
    if checkpoint is None:
        raise NotVisible()
    return checkpoint


# The newest 100 rows (GET), and one more made by a service (POST: 201 with it). A comment,
# not a docstring: drf-spectacular would print a docstring as each operation's description.
class ListCreateView(StaffView):
    serializer: type[serializers.Serializer]
    create_serializer: type[serializers.Serializer]
    list_operation_id: str

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        extend_schema_view(
            get=extend_schema(
                responses=cls.serializer(many=True), operation_id=cls.list_operation_id
            ),
            post=extend_schema(request=cls.create_serializer, responses={201: cls.serializer}),
        )(cls)

    def rows(self) -> QuerySet:
        """The rows, newest first."""
        raise NotImplementedError

    def create(self, request, data: dict):
        """Make one row from ``create_serializer``'s validated ``data``."""
        raise NotImplementedError

    def get(self, request):
        return Response(self.serializer(self.rows()[:100], many=True).data)

    def post(self, request):
        made = self.create(request, _valid(self.create_serializer, request, request.data))
        return Response(self.serializer(made).data, status=status.HTTP_201_CREATED)


class SnapshotsView(ListCreateView):
    serializer, create_serializer = SnapshotSerializer, SnapshotInSerializer
    list_operation_id = "training_snapshots_list"

    def rows(self) -> QuerySet:
        return selectors.snapshots(self.request.user)

    def create(self, request, data: dict) -> DatasetSnapshot:
        slugs = data.get("studies") or [None]  # none named: the default study
        data["studies"] = [scope.study_for(request.user, s, roles.RUN_STUDY) for s in slugs]
        return services.create_snapshot(user=request.user, **data)


class RunsView(ListCreateView):
    serializer, create_serializer = RunSerializer, RunInSerializer
    list_operation_id = "training_runs_list"

    def rows(self) -> QuerySet:
        return selectors.runs(self.request.user)

    def create(self, request, data: dict) -> TrainingRun:
        return services.start_run(
            data["snapshot"],
            encoder=data.get("encoder") or None,
            epochs=data.get("epochs"),
            recipe=data.get("recipe"),
            paraphrases=data["paraphrases"],
            hyperparameters=data.get("hyperparameters"),
            steering=parse_steering(data.get("steer"), data.get("balance"), data.get("groups")),
            search=data.get("search"),
            user=request.user,
        )


class RunView(StaffView):
    @extend_schema(responses=RunSerializer, operation_id="training_run_detail")
    def get(self, request, run_id: int):
        return Response(RunSerializer(_run(run_id, request.user)).data)


class CancelRunView(StaffView):
    @extend_schema(request=None, responses=RunSerializer)
    def post(self, request, run_id: int):
        run = services.cancel_run(_run(run_id, request.user, roles.RUN_STUDY), user=request.user)
        return Response(RunSerializer(run).data)


class CheckpointsView(StaffView):
    @extend_schema(responses=CheckpointSerializer(many=True))
    def get(self, request):
        return Response(CheckpointSerializer(selectors.lineage(request.user), many=True).data)


class PromoteView(StaffView):
    @extend_schema(request=PromoteSerializer, responses=CheckpointSerializer)
    def post(self, request, version: int):
        """Promote after the group check; 409 "reports computing" while the reports it
        needs are queued (never computed in the request), 409 when a group falls."""
        data = _valid(PromoteSerializer, request, request.data)
        checkpoint = _version(version, request.user, roles.RUN_STUDY)
        checkpoint = services.promote(checkpoint, user=request.user, compute=False, **data)
        return Response(CheckpointSerializer(checkpoint).data)


class CardView(StaffView):
    @extend_schema(
        responses={(200, "text/markdown"): OpenApiTypes.STR},
        description="The version's model card: YAML front matter, then Markdown.",
    )
    def get(self, request, version: int):
        card = services.model_card(_version(version, request.user))
        return HttpResponse(card, content_type="text/markdown; charset=utf-8")


class RollbackView(StaffView):
    @extend_schema(request=ReasonSerializer, responses=CheckpointSerializer)
    def post(self, request):
        reason = _valid(ReasonSerializer, request, request.data)
        if not selectors.may_roll_back(request.user):
            raise RoleRefused("You may roll back only from and to versions you may run.")
        checkpoint = services.rollback(user=request.user, **reason)
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
        v = _valid(CompareSerializer, request, request.query_params)
        a, b = _version(v["a"], request.user), _version(v["b"], request.user)
        snapshot = v.get("snapshot")
        missing = selectors.not_evaluated_on(snapshot, a, b) if snapshot else []
        if missing:
            services.request_evaluations(snapshot, missing)
            pending = [c.version for c in missing]
            return Response({"pending": pending, "snapshot": snapshot.pk}, status=202)
        common = snapshot or selectors.common_snapshot(request.user, a, b)  # one they may see
        if common is None:
            raise RegistryError(
                f"v{a.version} and v{b.version} were never evaluated on the same snapshot; "
                "name a snapshot to evaluate both on it"
            )
        return Response(services.compare(a, b, snapshot=common))


class PerspectivesQuerySerializer(serializers.Serializer):
    snapshot = VisibleSnapshotField(required=False)
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
    hidden_groups = serializers.IntegerField(
        help_text="How many groups of fewer than k annotators were hidden (never named)."
    )
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
            "snapshot or ``?snapshot=``. Groups under k are hidden, only counted "
            "(``hidden_groups``). Reports not stored yet are queued on the default queue and "
            "the answer is 202 with the pending fields: ask again shortly. ``?format=csv``: one "
            "row per group."
        ),
    )
    def get(self, request, version: int):
        v = _valid(PerspectivesQuerySerializer, request, request.query_params)
        checkpoint = _version(version, request.user)
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
