"""The staff REST API of studies: list them with their progress, create one (a draft),
and move one through its lifecycle (open, close, archive). Thin: ``annotation.studies.lifecycle``
does the work and says what is refused (400 invalid, 404 unknown, 409 a move the
lifecycle does not allow or a slug taken)."""

from django.db import transaction
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAdminUser
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.access import roles, scope
from annotation.access import services as access
from annotation.models import Study
from annotation.studies import lifecycle as studies
from core.api_bodies import ParsedFirst


class StudyProgressSerializer(serializers.Serializer):
    slug = serializers.SlugField()
    name = serializers.CharField()
    kind = serializers.ChoiceField(Study.Kind.choices)
    status = serializers.ChoiceField(Study.Status.choices)
    participants = serializers.IntegerField(help_text="Non-staff annotators whose consent stands.")
    n_tasks = serializers.IntegerField(help_text="Tasks, gold tasks left out.")
    slots = serializers.IntegerField(help_text="Rankings the tasks ask for (their overlap).")
    rankings = serializers.IntegerField()
    complete = serializers.IntegerField(help_text="Tasks with all the rankings they ask for.")


class Strict:
    """A field that takes its JSON type only (DRF would turn 0 into "0" and "2" into 2)."""

    json_type: type = str

    def to_internal_value(self, data):
        if not isinstance(data, self.json_type) or isinstance(data, bool):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictSlugField(Strict, serializers.SlugField):
    pass


class StrictCharField(Strict, serializers.CharField):
    pass


class StrictIntegerField(Strict, serializers.IntegerField):
    json_type = int


class CreateStudySerializer(serializers.Serializer):
    slug = StrictSlugField(max_length=60, help_text="The entry link is /join/{this slug}/.")
    kind = serializers.ChoiceField(Study.Kind.choices, default=Study.Kind.COLLECTION)
    name = StrictCharField(max_length=200, required=False, default="")
    task_size = StrictIntegerField(min_value=2, max_value=100, required=False)
    overlap = StrictIntegerField(min_value=1, max_value=1000, required=False)
    platform = serializers.ChoiceField(Study.Platform.choices, default=Study.Platform.GENERIC)
    gold_per_occupation = StrictIntegerField(
        min_value=0,
        max_value=100,
        required=False,
        default=1,
        help_text="Gold tasks build_tasks makes per occupation; 0 turns them off (with a reason).",
    )
    checks_per_occupation = StrictIntegerField(
        min_value=0,
        max_value=100,
        required=False,
        default=1,
        help_text="Attention-check tasks per occupation; 0 turns them off (with a reason).",
    )
    quality_off_reason = StrictCharField(
        max_length=2000,
        required=False,
        allow_blank=True,
        default="",
        help_text="Why gold or attention-check tasks are off: required (400 without it) when "
        "either count is 0, refused when neither is.",
    )
    completion_code = StrictCharField(
        max_length=100,
        required=False,
        allow_blank=True,
        default="",
        help_text="What a finished participant claims their pay with (Prolific, MTurk: "
        "required to open).",
    )
    completion_url = StrictCharField(
        max_length=500,
        required=False,
        allow_blank=True,
        default="",
        help_text="https:// address a finished participant goes back to; {code} becomes the "
        "code (blank on Prolific: its completion address).",
    )
    screen_out_code = StrictCharField(
        max_length=100,
        required=False,
        allow_blank=True,
        default="",
        help_text="What a screened-out participant returns with (Prolific, MTurk: required "
        "to open).",
    )
    screen_out_url = StrictCharField(
        max_length=500,
        required=False,
        allow_blank=True,
        default="",
        help_text="https:// address a screened-out participant goes back to.",
    )
    languages = serializers.ListField(
        child=StrictCharField(max_length=16),
        required=False,
        min_length=1,
        help_text="Languages participants may read the portal in, the first the default "
        '(e.g. ["nl", "en"]); each needs a shipped catalogue. Default: ["en"].',
    )
    question_format = serializers.ChoiceField(
        Study.Question.choices,
        default=Study.Question.RANK,
        help_text="What each task asks; 400 when it does not fit the task size (pairwise: "
        "2 cards; top_k: question_k below the task size less one).",
    )
    question_k = StrictIntegerField(
        min_value=1, max_value=100, required=False, help_text="top_k: the cards ordered."
    )


class StudySerializer(serializers.ModelSerializer):
    class Meta:
        model = Study
        fields = [
            "slug",
            "name",
            "kind",
            "status",
            "platform",
            "task_size",
            "overlap",
            "gold_per_occupation",
            "checks_per_occupation",
            "quality_off_reason",
            "completion_code",
            "completion_url",
            "screen_out_code",
            "screen_out_url",
            "languages",
            "question_format",
            "question_k",
        ]


class TransitionSerializer(serializers.Serializer):
    status = serializers.ChoiceField(
        Study.Status.choices,
        help_text="open, closed or archived (draft -> open -> closed -> open or archived; "
        "409 for any other move).",
    )


class StudiesView(ParsedFirst, APIView):
    """Every study the viewer has a role in, with its progress (GET); a new study, a draft,
    owned by whoever made it (POST)."""

    permission_classes = [IsAdminUser]

    @extend_schema(responses=StudyProgressSerializer(many=True))
    def get(self, request):
        return Response(StudyProgressSerializer(studies.progress(request.user), many=True).data)

    @extend_schema(request=CreateStudySerializer, responses={201: StudySerializer})
    def post(self, request):
        data = CreateStudySerializer(data=request.data)
        data.is_valid(raise_exception=True)
        with transaction.atomic():
            study = studies.create_study(**data.validated_data)
            if not request.user.is_superuser:  # the installation's account sees all anyway
                access.grant(study, request.user.get_username(), roles.OWNER, by=request.user)
        return Response(StudySerializer(study).data, status=status.HTTP_201_CREATED)


class StudyTransitionView(ParsedFirst, APIView):
    """Open, close or archive a study; 409 for a move its lifecycle does not allow."""

    permission_classes = [IsAdminUser]

    @extend_schema(request=TransitionSerializer, responses=StudySerializer)
    def post(self, request, slug: str):
        data = TransitionSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        study = scope.study_for(request.user, slug, roles.RUN_STUDY)
        study = studies.transition(study, data.validated_data["status"])
        return Response(StudySerializer(study).data)
