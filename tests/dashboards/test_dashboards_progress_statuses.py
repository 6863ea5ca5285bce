"""The progress page lists and counts only annotators whose consent stands."""

from django.urls import reverse

from annotation.models import ConsentText, DemographicField
from annotation.participants import services
from annotation.participants.erasure import erase_annotator

URL = reverse("dashboards:progress")


def test_withdrawn_and_erased_annotators_are_neither_listed_nor_counted(
    staff_client, make_tasks, annotator, rank, settings
):
    settings.STEREORANK = {**settings.STEREORANK, "GROUP_K": 2}
    make_tasks(n=3, k=3, overlap=3)
    DemographicField.objects.create(key="gender", label="Gender", choices=["woman", "man"])
    people = {name: annotator(name).profile for name in ("ann", "wil", "era", "ver")}
    for profile, gender in zip(people.values(), ["woman", "man", "man", "woman"], strict=True):
        services.save_demographics(profile, {"gender": gender})
        rank(profile, 1)
    services.withdraw_consent(people["wil"])
    erase_annotator(people["era"], via="staff")
    # "ver" agreed to an older version: the consent stands, still active
    ConsentText.objects.create(version=ConsentText.objects.first().version + 1, text="v2")

    response = staff_client.get(URL)
    listed = {row["username"] for row in response.context["annotators"]}
    assert listed == {"ann", "ver"}
    gender = dict(response.context["demographics"][0]["counts"])
    assert gender == {"woman": 2}  # "man": nobody active, no group
    assert response.context["n_people"] == 2
    assert response.context["statuses"] == {"active": 2, "withdrawn": 1, "erased": 1}
    assert "withdrawn: 1" in response.content.decode()


def test_each_quota_shows_its_fill_groups_under_k_hidden(
    staff_client, make_tasks, annotator, rank, settings
):
    from annotation.models import GroupQuota

    settings.STEREORANK = {**settings.STEREORANK, "GROUP_K": 2}

    make_tasks(n=3, k=3, overlap=5)
    age = DemographicField.objects.create(key="age", label="Age", choices=["18-24", "25-34"])
    GroupQuota.objects.create(field=age, value="18-24", target=2)
    GroupQuota.objects.create(field=age, value="prefer not to say", target=4)
    for name, answer in [("a", "18-24"), ("b", "18-24"), ("c", "")]:
        profile = annotator(name).profile
        services.save_demographics(profile, {"age": answer})
        rank(profile, 1)
    services.withdraw_consent(annotator("d").profile)  # never ranked, no seat

    response = staff_client.get(URL)
    fill = {
        q["value"]: (q["filled"], q["target"], q["percent"]) for q in response.context["quotas"]
    }
    # "prefer not to say" holds one annotator, under k = 2: hidden, only counted
    assert fill == {"18-24": (2, 2, 100)}
    html = response.content.decode()
    assert 'data-quota="age:18-24"' in html and "full" in html
    assert "prefer not to say" not in html.split('id="quotas"')[1].split("</section>")[0]
    assert response.context["quotas_hidden"] == "1 group below k = 2 hidden"
    settings.STEREORANK = {**settings.STEREORANK, "GROUP_K": 1}
    fill = {q["value"]: q["filled"] for q in staff_client.get(URL).context["quotas"]}
    assert fill == {"18-24": 2, "prefer not to say": 1}
