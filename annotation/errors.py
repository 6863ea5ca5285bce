"""The annotation side's refusals (kinds and translation: ``core.errors``)."""

from core.errors import Conflict, Forbidden, NotFound, StereorankError


class AnnotationError(StereorankError):
    """An annotator's or an import's request refused (invalid input unless a kind says else)."""


class ConsentRequired(AnnotationError, Forbidden):
    """Ranking needs an active consent."""


class TaskNotFound(AnnotationError, NotFound):
    """No such task."""


class AnnotatorExcluded(AnnotationError, Forbidden):
    """The quality policy (or staff) excluded this annotator: no more tasks."""


class StatusConflict(AnnotationError, Conflict):
    """A status change that does not apply to the annotator's current status."""


class NotReserved(AnnotationError, Forbidden):
    """The task is not reserved for this annotator."""


class AlreadyRanked(AnnotationError, Conflict):
    """The annotator ranked this task with another order, or the task is full."""


class RankedBefore(AlreadyRanked):
    """The annotator's own ranking of the task is stored already, with another order: the
    first one stands (a retry after a lost answer, or a page shown again from history)."""


class InvalidAnswer(AnnotationError):
    """An order or a demographic answer that is not one the task or the field allows."""


class ManifestError(AnnotationError):
    """An import manifest that cannot be loaded: every bad row, one per line."""

    def __init__(self, errors: list[str]):
        super().__init__("\n".join(errors))
        self.errors = errors


class AlreadyErased(AnnotationError, Conflict):
    """The annotator's data is already erased."""


class UnknownAnnotator(AnnotationError, NotFound):
    """No annotator has this pseudonym."""


class InvalidLink(AnnotationError):
    """An entry link without the ids its platform adds."""


class StudyClosed(AnnotationError, Forbidden):
    """The study admits nobody new."""


class AlreadyTookPart(AnnotationError, Conflict):
    """The participant took part in this study already (another session)."""


class CannotReconsider(AnnotationError, Conflict):
    """A screen-out that cannot be taken back (the participant left, or the group is full)."""


class GroupFull(AnnotationError, Conflict):
    """The quota of the annotator's group is full: no first task for them."""


class ConditionError(AnnotationError):
    """A validation study's condition, manifest or image import that cannot be made."""


class StudyNotFound(AnnotationError, NotFound):
    """No study has this slug."""


class InvalidStudy(AnnotationError):
    """A study that cannot be made as asked (a bad slug, kind, size or overlap)."""


class StudyConflict(AnnotationError, Conflict):
    """The study exists already, or cannot move to that status from its own."""


class StudyNotReady(AnnotationError, Conflict):
    """A study cannot open while one of its languages lacks its consent text (or a field
    of it), its instructions, or a translation of a demographic question."""


class CrowdCodesMissing(AnnotationError, Conflict):
    """A crowd-platform study cannot open without the codes its participants are paid by."""


class NotFinished(AnnotationError, Conflict):
    """A participant asks for the completion code before the study's minimum work."""


class UnknownKey(AnnotationError, NotFound):
    """A resume link whose secret holds no participation (mistyped, or erased since)."""


class SignupClosed(AnnotationError, Forbidden):
    """The study takes no sign-ups: it is joined by its entry link or a staff-made account."""


class NotVisible(AnnotationError, NotFound):
    """An object of a study the viewer has no role in, or none at all: the two read the
    same (no existence oracle), so the message says nothing of which."""

    def __init__(self, message: str = "Not found."):
        super().__init__(message)


class RoleRefused(AnnotationError, Forbidden):
    """The viewer's role in this study does not allow this."""


class InvalidMembership(AnnotationError):
    """A role that cannot be granted as asked (an unknown role or account, a non-staff
    account, the demographics permission on a viewer, the study's last owner)."""


class UnknownAccount(AnnotationError, NotFound):
    """No account has this username."""
