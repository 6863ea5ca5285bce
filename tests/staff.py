"""Staff accounts for tests: a staff account (never a superuser) with a role in studies
(``annotation.access``), as ``create_annotator --staff`` then ``grant`` make one."""

from django.contrib.auth import get_user_model

from annotation.access.models import StudyMembership
from annotation.models import default_study


def make_staff(
    username: str = "boss",
    *studies,
    role: str = "owner",
    demographics: bool = True,
    password: str = "pw-123456",
):
    """A staff account with ``role`` in each of ``studies`` (the default study when none
    is given), with the demographics permission unless told otherwise (viewers never)."""
    user = get_user_model().objects.create_user(username, password=password, is_staff=True)
    give_role(user, *studies, role=role, demographics=demographics)
    return user


def give_role(user, *studies, role: str = "owner", demographics: bool = True) -> None:
    """``user`` gets ``role`` in each of ``studies`` (the default study when none is given)."""
    for study in studies or [default_study()]:
        StudyMembership.objects.update_or_create(
            user=user,
            study=study,
            defaults={"role": role, "demographics": demographics and role != "viewer"},
        )
    user.__dict__.pop("_study_roles", None)
