"""The staff REST API of a study's members and access log, for its owners
(``roles.MANAGE_STUDY``): list, grant (add or change a role) and revoke; the log of who
read or exported its personal data. Thin: ``annotation.access`` decides and records.
A study the caller has no role in is a 404; a role other than owner is a 403."""

from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers, status
from rest_framework.permissions import IsAdminUser
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.access import log, roles, scope, services
from annotation.access.models import AccessLogEntry, StudyMembership
from core.api_bodies import ParsedFirst


class MembershipSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username")
    granted_by = serializers.CharField(source="granted_by.username", default=None)

    class Meta:
        model = StudyMembership
        fields = ["username", "role", "demographics", "granted_by", "granted_at"]


class GrantSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    role = serializers.ChoiceField(roles.ROLES)
    demographics = serializers.BooleanField(
        default=False, help_text="May read one person's answers (researchers and owners)."
    )


class MembersView(ParsedFirst, APIView):
    """The study's members (GET); give an account a role, or another one (POST: 201 when
    it had none, 200 when it changed; 400 for a non-staff account, the demographics
    permission on a viewer or the study's last owner; 404 for an unknown account)."""

    permission_classes = [IsAdminUser]

    @extend_schema(responses=MembershipSerializer(many=True))
    def get(self, request, slug: str):
        study = scope.study_for(request.user, slug, roles.MANAGE_STUDY)
        return Response(MembershipSerializer(services.members(study), many=True).data)

    @extend_schema(request=GrantSerializer, responses={201: MembershipSerializer})
    def post(self, request, slug: str):
        study = scope.study_for(request.user, slug, roles.MANAGE_STUDY)
        data = GrantSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        membership, created = services.grant(study, **data.validated_data, by=request.user)
        code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        return Response(MembershipSerializer(membership).data, status=code)


class MemberView(ParsedFirst, APIView):
    """Take a member's role away (204; 404 for one who has none there)."""

    permission_classes = [IsAdminUser]

    @extend_schema(request=None, responses={204: None})
    def delete(self, request, slug: str, username: str):
        study = scope.study_for(request.user, slug, roles.MANAGE_STUDY)
        services.revoke(study, username)
        return Response(status=status.HTTP_204_NO_CONTENT)


class AccessLogEntrySerializer(serializers.ModelSerializer):
    class Meta:
        model = AccessLogEntry
        fields = ["at", "username", "action", "surface", "what"]


class AccessLogView(ParsedFirst, generics.ListAPIView):
    """Who read or exported the study's personal data, when, through which surface;
    newest first, a page at a time."""

    permission_classes = [IsAdminUser]
    serializer_class = AccessLogEntrySerializer

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # the schema's generator asks too
            return AccessLogEntry.objects.none()
        return log.entries(
            scope.study_for(self.request.user, self.kwargs["slug"], roles.MANAGE_STUDY)
        )
