"""Our group quotas and languages as a platform's screening, and what a full group
removes from it; pure (plain data in, plain data out).

Which of our demographic fields map to which of Prolific's filters (``FIELD_FILTERS``),
and why the others do not:

- ``age_band`` -> ``age`` (a range filter): a full band at either end narrows the range;
  a full band in the middle cannot be cut out of one range and is said, not sent.
- ``country_of_residence`` -> ``current-country-of-residence`` and ``first_language`` ->
  ``first-language`` (select filters): a full group's choice is dropped, matched by its
  label (case ignored).
- the study's languages -> ``fluent-languages``, by each language's English name.
- ``gender_identity``, ``education``, ``ethnicity``, ``nationality``, ``disability``: no
  Prolific filter asks our question with our answers (its ``sex`` is not gender identity),
  so they stay screened on our side: a full group's newcomer leaves with the screen-out
  code.
- ``religion_or_belief`` is a special category: never sent to a platform as screening.

A quota caps a group; a group without one is not limited. So nothing is screened out at
first but the languages; a group is removed from the screening when it fills.
"""

from __future__ import annotations

from dataclasses import dataclass, field

FIELD_FILTERS = {
    "age_band": "age",
    "country_of_residence": "current-country-of-residence",
    "first_language": "first-language",
}
LANGUAGE_FILTER = "fluent-languages"
NEVER_SENT = frozenset({"religion_or_belief"})
_OPEN_TOP = 100  # "75 or over": Prolific's age filter tops out below this


@dataclass(frozen=True)
class Group:
    """A quota group: a field's answer, its target and the seats taken."""

    field: str
    value: str
    target: int
    taken: int

    @property
    def full(self) -> bool:
        return self.taken >= self.target


@dataclass
class Screening:
    """The filters to send, the groups removed from them, and one line per thing said."""

    filters: list[dict] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def band(value: str) -> tuple[int, int] | None:
    """An age band's bounds: "25-34" -> (25, 34), "75 or over" -> (75, 100)."""
    text = value.strip().lower()
    if "-" in text:
        low, _, high = text.partition("-")
        if low.strip().isdigit() and high.strip().isdigit():
            return int(low), int(high)
    head = text.split(" ", 1)[0]
    if head.isdigit() and ("over" in text or "+" in text):
        return int(head), _OPEN_TOP
    return None


def screening(
    groups: list[Group],
    field_choices: dict[str, list[str]],
    languages: list[str],
    catalogue: list[dict],
) -> Screening:
    """The screening for a study with ``groups`` (its quotas), ``field_choices`` (each
    field's answers), ``languages`` (English names) and the platform's filter
    ``catalogue`` ("List filters")."""
    by_id = {row.get("filter_id"): row for row in catalogue}
    out = Screening()
    if languages:
        _select(out, by_id.get(LANGUAGE_FILTER), LANGUAGE_FILTER, keep=languages, removed=[])
    fields = sorted({g.field for g in groups})
    for name in fields:
        full = [g for g in groups if g.field == name and g.full]
        if name in NEVER_SENT:
            out.notes.append(f"{name}: a special category, never sent as screening")
            continue
        filter_id = FIELD_FILTERS.get(name)
        if filter_id is None:
            out.notes.append(f"{name}: no Prolific filter asks it as we do; screened on our side")
            continue
        if not full:
            out.notes.append(f"{name} -> {filter_id}: no group full, nothing screened")
            continue
        spec = by_id.get(filter_id)
        if filter_id == "age":
            _age(out, spec, field_choices.get(name, []), full)
        else:
            options = _choices(spec)
            gone = {g.value.casefold() for g in full}
            keep = [label for label in options.values() if label.casefold() not in gone]
            _select(out, spec, filter_id, keep=keep, removed=[f"{name}={g.value}" for g in full])
    return out


def _choices(spec: dict | None) -> dict[str, str]:
    choices = (spec or {}).get("choices") or {}
    if isinstance(choices, list):  # [{"value": id, "label": text}] in some versions
        return {str(c.get("value")): str(c.get("label")) for c in choices}
    return {str(k): str(v) for k, v in choices.items()}


def _select(out: Screening, spec, filter_id: str, keep: list[str], removed: list[str]) -> None:
    if spec is None:
        out.notes.append(f"{filter_id}: the platform offers no such filter; not sent")
        return
    options = _choices(spec)
    wanted = {label.casefold() for label in keep}
    ids = [key for key, label in options.items() if label.casefold() in wanted]
    unknown = sorted(wanted - {label.casefold() for label in options.values()})
    if unknown:
        out.notes.append(f"{filter_id}: not among its choices: {', '.join(unknown)}")
    out.filters.append({"filter_id": filter_id, "selected_values": ids})
    out.removed.extend(removed)
    out.notes.append(f"{filter_id}: {len(ids)} of {len(options)} choices")


def _age(out: Screening, spec, choices: list[str], full: list[Group]) -> None:
    bands = [b for b in (band(c) for c in choices) if b]
    if spec is None or not bands:
        out.notes.append("age: no age filter or no bands; not sent")
        return
    bands.sort()
    gone = {band(g.value) for g in full}
    open_bands = [b for b in bands if b not in gone]
    if not open_bands:
        out.notes.append("age_band: every band full")
        out.filters.append({"filter_id": "age", "selected_range": {"lower": 0, "upper": 0}})
        out.removed.extend(f"age_band={g.value}" for g in full)
        return
    low, high = open_bands[0][0], open_bands[-1][1]
    inside = [g for g in full if band(g.value) and low <= band(g.value)[0] <= high]
    for g in inside:
        out.notes.append(f"age_band={g.value}: full, but inside the range: screened on our side")
    out.filters.append({"filter_id": "age", "selected_range": {"lower": low, "upper": high}})
    out.removed.extend(f"age_band={g.value}" for g in full if g not in inside)
    out.notes.append(f"age: {low} to {high}")
