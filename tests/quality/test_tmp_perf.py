import io, time
import pytest
from django.core.management import call_command
from annotation.models import AnnotatorProfile, RankingTask, Ranking, DemographicField

pytestmark = pytest.mark.django_db

def run(*a):
    out = io.StringIO(); call_command(*a, stdout=out, stderr=out); return out.getvalue()

def test_perf(media_root):
    t=time.time()
    run("load_catalogue", "--placeholder-images", "5")
    print(run("build_tasks", "--size", "6", "--gold-per-occupation", "1", "--checks-per-occupation", "1"))
    print("tasks", RankingTask.objects.count(), time.time()-t)
    t=time.time()
    print(run("simulate_annotators", "--count", "60", "--tasks-per-annotator", "20", "--careless", "0.2"))
    print("sim", time.time()-t, Ranking.objects.count())
    from annotation.quality_report import quality_report
    for nb in (200, 1000):
        t=time.time(); r = quality_report(include_synthetic=True, n_boot=nb); print("report", nb, time.time()-t)
    print(r["agreement"]["overall"])
    kinds = dict(AnnotatorProfile.objects.values_list("user_id", "synthetic_kind"))
    tp=fp=fn=0
    for row in r["annotators"]:
        flagged = row["status"] == "excluded"; careless = row["synthetic_kind"] != "careful"
        tp += flagged and careless; fp += flagged and not careless; fn += careless and not flagged
        print(row["synthetic_kind"], row["status"], row["gold_tasks"], row["gold_score"], row["checks"], row["check_pass_rate"], row["untouched_rate"], row["consensus_rho"], row["tasks"])
    print("tp fp fn", tp, fp, fn)
