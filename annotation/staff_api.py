"""Staff-only, read-only REST views of the catalogue, items, tasks and rankings.

Annotators are pseudonymous here as in the exports; demographics are only in the
exports. Every list runs a fixed number of queries whatever its length.
"""

from django.db.models import Prefetch, QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import serializers, viewsets
from rest_framework.exceptions import ParseError
from rest_framework.permissions import IsAdminUser

from .api import query_flag
from .exports import pseudonym
from .models import Item, Occupation, Prompt, PromptType, Ranking, RankingTask, TaskItem


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
            "created_at",
        ]

    def get_annotator(self, ranking: Ranking) -> str:
        return pseudonym(ranking.annotator.user_id)


def _int_param(request, name: str) -> int | None:
    """A whole-number query parameter, or None when absent; anything else (empty too) is a 400."""
    raw = request.query_params.get(name)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        raise ParseError(f"{name}: '{raw}' is not a whole number (an id).") from None


def _by_occupation(queryset: QuerySet, request, field: str) -> QuerySet:
    """Filter on ``?occupation=`` given as a slug or an id."""
    raw = request.query_params.get("occupation")
    if not raw:
        return queryset
    lookup = f"{field}_id" if raw.isdigit() else f"{field}__slug"
    return queryset.filter(**{lookup: int(raw) if raw.isdigit() else raw})


OCCUPATION = OpenApiParameter("occupation", str, description="Occupation slug or id.")
TASK = OpenApiParameter("task", int, description="Ranking task id.")
PROMPT_TYPE = OpenApiParameter("prompt_type", str, enum=PromptType.values)
SYNTHETIC = OpenApiParameter("synthetic", bool, description="Only synthetic (true) or real.")


class StaffViewSet(viewsets.ReadOnlyModelViewSet):
    permission_classes = [IsAdminUser]
    lookup_value_regex = r"\d+"


class OccupationViewSet(StaffViewSet):
    """The catalogue: occupations with all their prompts (originals and paraphrases)."""

    serializer_class = OccupationSerializer
    queryset = Occupation.objects.prefetch_related(
        Prefetch("prompts", queryset=Prompt.objects.order_by("prompt_type", "id"))
    )


@extend_schema_view(list=extend_schema(parameters=[OCCUPATION, PROMPT_TYPE]))
class ItemViewSet(StaffViewSet):
    """Prompt-image pairs."""

    serializer_class = StaffItemSerializer

    def get_queryset(self) -> QuerySet:
        items = Item.objects.select_related("prompt__occupation").order_by("id")
        items = _by_occupation(items, self.request, "prompt__occupation")
        prompt_type = self.request.query_params.get("prompt_type")
        if prompt_type:
            if prompt_type not in PromptType.values:
                raise ParseError(
                    f"prompt_type: '{prompt_type}' is not one of {', '.join(PromptType.values)}."
                )
            items = items.filter(prompt__prompt_type=prompt_type)
        return items


@extend_schema_view(list=extend_schema(parameters=[OCCUPATION]))
class TaskViewSet(StaffViewSet):
    """Ranking tasks: their item ids, overlap and how many rankings they hold."""

    serializer_class = StaffTaskSerializer

    def get_queryset(self) -> QuerySet:
        links = TaskItem.objects.only("task_id", "item_id").order_by("id")
        tasks = RankingTask.objects.select_related("occupation").prefetch_related(
            Prefetch("task_items", queryset=links)
        )
        return _by_occupation(tasks.order_by("id"), self.request, "occupation")


@extend_schema_view(list=extend_schema(parameters=[OCCUPATION, TASK, SYNTHETIC]))
class RankingViewSet(StaffViewSet):
    """Rankings with pseudonymous annotators (demographics are in the exports only)."""

    serializer_class = StaffRankingSerializer

    def get_queryset(self) -> QuerySet:
        rankings = Ranking.objects.select_related("annotator", "task__occupation").order_by("id")
        rankings = _by_occupation(rankings, self.request, "task__occupation")
        task = _int_param(self.request, "task")
        if task is not None:
            rankings = rankings.filter(task_id=task)
        synthetic = query_flag(self.request, "synthetic")
        if synthetic is not None:
            rankings = rankings.filter(annotator__is_synthetic=synthetic)
        return rankings
