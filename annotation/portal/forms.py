"""The demographics form of the portal, built from the active ``DemographicField`` rows.

Every question is optional and offers "prefer not to say". A field with choices
is a list; with ``allow_other`` the list ends in "other (in my own words)" and a
text box takes the words. A field without choices is a text box and a
"prefer not to say" box. The answers go through ``services.save_demographics``.
"""

from __future__ import annotations

from collections.abc import Sequence

from django import forms
from django.utils.translation import gettext

from annotation.models import DemographicField
from annotation.participants import services

PREFER_NOT = DemographicField.PREFER_NOT_TO_SAY
OTHER_CHOICE = "__other__"


def other_key(field: DemographicField) -> str:
    return f"{field.key}__other"


def prefer_not_key(field: DemographicField) -> str:
    return f"{field.key}__prefer_not"


class DemographicsForm(forms.Form):
    """Checks that "other" comes with words; the rest is in the fields."""

    demographic_fields: Sequence[DemographicField] = ()

    def clean(self) -> dict:
        data = super().clean()
        for field in self.demographic_fields:
            words = (data.get(other_key(field)) or "").strip()
            if field.allow_other and data.get(field.key) == OTHER_CHOICE and not words:
                self.add_error(
                    other_key(field), gettext("Describe it in your own words, or pick an option.")
                )
        return data


def demographics_form_class(
    fields: Sequence[DemographicField], language: str | None = None
) -> type[DemographicsForm]:
    """A form with one optional question per field (see the module docstring), its
    labels, help and choices in ``language`` (the fields' translations; the interface's
    own words through gettext); the values posted stay the canonical choices."""
    form_fields: dict[str, forms.Field] = {}
    for field in fields:
        label, help_text, shown = field.translated(language)
        if field.choices:
            options = [("", "—")] + [(c, shown[c]) for c in field.choices]
            if field.allow_other:
                options.append((OTHER_CHOICE, gettext("other (in my own words)")))
            options.append((PREFER_NOT, gettext("prefer not to say")))
            form_fields[field.key] = forms.ChoiceField(
                label=label, help_text=help_text, choices=options, required=False
            )
            if field.allow_other:
                form_fields[other_key(field)] = forms.CharField(
                    label=gettext("%(question)s, in your own words") % {"question": label},
                    required=False,
                    max_length=services.MAX_ANSWER_LENGTH,
                )
        else:
            form_fields[field.key] = forms.CharField(
                label=label,
                help_text=help_text,
                required=False,
                max_length=services.MAX_ANSWER_LENGTH,
            )
            form_fields[prefer_not_key(field)] = forms.BooleanField(
                label=gettext("%(question)s: prefer not to say") % {"question": label},
                required=False,
            )
    return type(
        "DemographicsForm",
        (DemographicsForm,),
        {**form_fields, "demographic_fields": tuple(fields)},
    )


def answers(form: DemographicsForm) -> dict[str, str]:
    """The valid form's answers keyed by field, "" for the unanswered."""
    out = {}
    for field in form.demographic_fields:
        value = form.cleaned_data.get(field.key) or ""
        if value in (OTHER_CHOICE, "") and field.allow_other:
            value = form.cleaned_data.get(other_key(field), "")  # words without "other" too
        if form.cleaned_data.get(prefer_not_key(field)):
            value = PREFER_NOT
        out[field.key] = value
    return out


def initial(fields: Sequence[DemographicField], stored: dict) -> dict[str, object]:
    """The form's initial values from stored answers (own words shown as "other")."""
    out: dict[str, object] = {}
    for field in fields:
        value = stored.get(field.key, "")
        if not field.choices and value == PREFER_NOT:
            out[prefer_not_key(field)] = True
        elif field.choices and value and value not in (*field.choices, PREFER_NOT):
            out[field.key] = OTHER_CHOICE
            out[other_key(field)] = value
        else:
            out[field.key] = value
    return out


def rows(form: DemographicsForm) -> list[dict]:
    """Per question, the bound fields the template lays out together."""
    return [
        {
            "field": form[f.key],
            "other": form[other_key(f)] if f.allow_other and f.choices else None,
            "prefer_not": None if f.choices else form[prefer_not_key(f)],
        }
        for f in form.demographic_fields
    ]
