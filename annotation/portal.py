"""Server-rendered annotator portal: thin views over annotation.services."""

import json

from django import forms
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import UserCreationForm
from django.core.exceptions import ValidationError
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from . import services
from .models import ConsentText, DemographicField, Item


def consent_required(view):
    """Log-in first, then consent before anything else."""

    @login_required
    def wrapped(request, *args, **kwargs):
        request.profile = services.get_profile(request.user)
        if not services.has_consent(request.profile):
            return redirect("portal:consent")
        return view(request, *args, **kwargs)

    return wrapped


def signup(request):
    form = UserCreationForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        login(request, user)
        return redirect("portal:consent")
    return render(request, "portal/signup.html", {"form": form})


@login_required
def consent(request):
    profile = services.get_profile(request.user)
    if request.method == "POST":
        if request.POST.get("action") == "withdraw":
            services.withdraw_consent(profile)
            return redirect("portal:consent")
        services.give_consent(profile)
        return redirect("portal:demographics")
    return render(request, "portal/consent.html", {
        "text": ConsentText.objects.first(), "given": services.has_consent(profile)})


def demographics_form(data=None, initial=None) -> forms.Form:
    """A form built from the active DemographicField rows; every field optional."""
    form = forms.Form(data, initial=initial)
    for field in DemographicField.objects.filter(active=True):
        if field.choices:
            options = [("", "—")] + [(c, c) for c in field.choices]
            options.append((DemographicField.PREFER_NOT_TO_SAY, "Prefer not to say"))
            form.fields[field.key] = forms.ChoiceField(
                label=field.label, choices=options, required=False, help_text=field.help_text)
        else:
            form.fields[field.key] = forms.CharField(
                label=field.label, required=False, max_length=200,
                help_text=field.help_text or "Free text, or 'prefer not to say'")
    return form


@consent_required
def demographics(request):
    form = demographics_form(request.POST or None, initial=request.profile.demographics)
    if request.method == "POST" and form.is_valid():
        try:
            services.save_demographics(request.profile, form.cleaned_data)
        except ValidationError as error:
            form.add_error(None, error)
        else:
            return redirect("portal:home")
    return render(request, "portal/demographics.html", {"form": form})


@consent_required
def home(request):
    return render(request, "portal/home.html", {"progress": services.progress(request.profile)})


@consent_required
def rank(request):
    assignment = services.next_task(request.profile)
    if assignment is None:
        return render(request, "portal/done.html", {"progress": services.progress(request.profile)})
    items = Item.objects.select_related("prompt").in_bulk(assignment.shown_order)
    return render(request, "portal/rank.html", {
        "assignment": assignment,
        "items": [items[i] for i in assignment.shown_order],
        "progress": services.progress(request.profile),
    })


@require_POST
@consent_required
def submit(request, task_id: int):
    try:
        order = json.loads(request.POST.get("order", ""))
        seconds = float(request.POST.get("seconds_spent") or 0) or None
        services.submit_ranking(request.profile, task_id, order, seconds)
    except (ValueError, ValidationError, services.AssignmentError) as error:
        message = getattr(error, "message", None) or " ".join(getattr(error, "messages", [])) \
            or "The ranking could not be read."
        return render(request, "portal/error.html", {"message": message}, status=400)
    return redirect("portal:rank")
