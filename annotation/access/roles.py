"""The roles as data: which role in a study may do what. Pure Python (no Django), read by
the permission backend (``backend``), the one queryset (``scope``), grant (``services``)
and the docs.

A capability is named like a Django permission (``user.has_perm(VIEW_DATA, study)``);
it is always asked of one study, never globally.

- ``VIEW_REPORTS``: the study's aggregate reports (progress counts, the quality and
  validation figures), its settings;
- ``VIEW_DATA``: its rows, pseudonymous: items, tasks, rankings, the annotator tables,
  exports without demographics, snapshots of it and the runs and checkpoints made from
  them;
- ``RUN_STUDY``: running it: open, close, sampler, reinstate, snapshot, train, promote;
- ``MANAGE_STUDY``: its members, its access log, its deletion;
- ``VIEW_DEMOGRAPHICS``: any one person's demographic answers (exports with
  demographics, an annotator's admin page, per-answer counts). Not a role's: the
  membership's own flag, and only on a role that reads rows (``VIEW_DATA``).
"""

from __future__ import annotations

OWNER = "owner"
RESEARCHER = "researcher"
VIEWER = "viewer"
ROLES = (OWNER, RESEARCHER, VIEWER)

VIEW_REPORTS = "annotation.view_study_reports"
VIEW_DATA = "annotation.view_study_data"
RUN_STUDY = "annotation.run_study"
MANAGE_STUDY = "annotation.manage_study"
VIEW_DEMOGRAPHICS = "annotation.view_study_demographics"
CAPABILITIES = (VIEW_REPORTS, VIEW_DATA, RUN_STUDY, MANAGE_STUDY, VIEW_DEMOGRAPHICS)

# What each role may do in its study.
GRANTS: dict[str, frozenset[str]] = {
    OWNER: frozenset({VIEW_REPORTS, VIEW_DATA, RUN_STUDY, MANAGE_STUDY}),
    RESEARCHER: frozenset({VIEW_REPORTS, VIEW_DATA, RUN_STUDY}),
    VIEWER: frozenset({VIEW_REPORTS}),
}
# The demographics flag counts only on a role that reads rows: a viewer reads aggregates.
DEMOGRAPHICS_NEED = VIEW_DATA
# Any role at all: what a study must be to be named to its member (else it is a 404).
ANY_ROLE = VIEW_REPORTS

DESCRIPTIONS = {
    OWNER: "everything, including its members, its access log and its deletion",
    RESEARCHER: "runs the study, sees its rankings and reports",
    VIEWER: "reads its aggregate reports only",
}


def _known(capability: str) -> str:
    if capability not in CAPABILITIES:  # a typo must not read as "no one may"
        raise ValueError(f"unknown capability {capability!r}")
    return capability


def allows(role: str, demographics: bool, capability: str) -> bool:
    """Whether a member of ``role`` (with the demographics flag or not) may ``capability``."""
    granted = GRANTS.get(role, frozenset())
    if _known(capability) == VIEW_DEMOGRAPHICS:
        return demographics and DEMOGRAPHICS_NEED in granted
    return capability in granted


def roles_with(capability: str) -> list[str]:
    """The roles that may ``capability`` (``VIEW_DEMOGRAPHICS``: those its flag counts on)."""
    needed = DEMOGRAPHICS_NEED if _known(capability) == VIEW_DEMOGRAPHICS else capability
    return [role for role in ROLES if needed in GRANTS[role]]


def refusal(role: str, demographics: bool) -> str:
    """Why a membership of ``role`` with that flag cannot be recorded ("" when it can)."""
    if role not in ROLES:
        return f"unknown role {role!r}: use one of {', '.join(ROLES)}"
    if demographics and not allows(role, True, VIEW_DEMOGRAPHICS):
        return (
            f"a {role} reads aggregate reports only: the demographics permission needs "
            f"the {' or '.join(roles_with(VIEW_DEMOGRAPHICS))} role"
        )
    return ""
