"""A run's pod to its CronJob or bare Job (``bot.metrics.jobs``): the owner chain first, the
names the CronJob controller and generators make second."""

from __future__ import annotations

from bot.metrics import HistoryRequest
from bot.metrics.job_groups import grouped_jobs, ksm_label
from bot.metrics.mapping import PodOwner, map_pods
from bot.model import WorkloadRef

REPORT = WorkloadRef("CronJob", "shop", "report")
REINDEX = WorkloadRef("Job", "shop", "reindex")
SEED = WorkloadRef("Job", "shop", "seed")


def _map(owners, job_owners, pods=()):
    return map_pods([REPORT, REINDEX, SEED], pods, owners, {}, job_owners)


def test_owner_chain_pod_job_cronjob():
    mapping = _map(
        {
            "report-29453760-stqnz": PodOwner("Job", "report-29453760"),
            "manual-run-x2b4c": PodOwner("Job", "manual-run"),  # kubectl create job --from
        },
        {
            "report-29453760": PodOwner("CronJob", "report"),
            "manual-run": PodOwner("CronJob", "report"),
        },
    )
    assert mapping.by_pod == {"report-29453760-stqnz": REPORT, "manual-run-x2b4c": REPORT}
    assert mapping.owned[REPORT] == {"report-29453760-stqnz", "manual-run-x2b4c"}
    assert not mapping.by_pattern


def test_bare_jobs_by_name_and_by_generator_suffix():
    mapping = _map(
        {
            "seed-h7x2k": PodOwner("Job", "seed"),
            "reindex-7-bq9zl": PodOwner("Job", "reindex-7"),  # a Helm revision
            "reindex-kx4vw-r2d2b": PodOwner("Job", "reindex-kx4vw"),  # generateName
            "reindex-full-zz2kq": PodOwner("Job", "reindex-full"),  # another Job
        },
        {},
    )
    assert mapping.by_pod == {
        "seed-h7x2k": SEED,
        "reindex-7-bq9zl": REINDEX,
        "reindex-kx4vw-r2d2b": REINDEX,
    }


def test_a_cronjobs_job_is_never_grouped_under_a_bare_job():
    mapping = map_pods(
        [REINDEX],
        (),
        {"reindex-29453760-stqnz": PodOwner("Job", "reindex-29453760")},
        {},
        {"reindex-29453760": PodOwner("CronJob", "reindex")},  # a CronJob not requested
    )
    assert not mapping.by_pod


def test_a_job_kube_state_metrics_lost_is_matched_by_the_cronjob_schedule_suffix():
    mapping = _map({"report-29454000-m92w8": PodOwner("Job", "report-29454000")}, {})
    assert mapping.by_pod == {"report-29454000-m92w8": REPORT}


def test_a_pod_kube_state_metrics_never_saw_falls_back_to_the_name_pattern():
    pods = ["report-29454240-hvhlv", "report-hvhlv", "reindex-3-b2c4d", "seed-b2c4d"]
    mapping = _map({}, {}, pods)
    assert mapping.by_pod == {
        "report-29454240-hvhlv": REPORT,
        "reindex-3-b2c4d": REINDEX,
        "seed-b2c4d": SEED,
    }
    assert mapping.by_pattern == {"report-29454240-hvhlv", "reindex-3-b2c4d", "seed-b2c4d"}


def _request(ref, **labels):
    return HistoryRequest(ref, ("app",), labels=labels)


def test_bare_jobs_grouped_by_labels_whatever_their_names():
    """A Job carrying the declared values is a run (``ci-7f3k``); one named like the Job but
    carrying other values is not (``reindex-7``); a CronJob's Job stays the CronJob's."""
    requests = [_request(REINDEX, app="reindex", team="search"), _request(SEED, app="seed")]
    labels = {
        "ci-7f3k": ("reindex", "search"),
        "reindex-7": ("reindex", "ads"),
        "report-29453760": ("reindex", "search"),
        "unlabelled": ("", ""),
    }
    grouped = grouped_jobs(requests, labels, ("app", "team"))
    assert grouped == {"ci-7f3k": REINDEX, "reindex-7": None, "report-29453760": REINDEX}
    mapping = map_pods(
        [REPORT, REINDEX, SEED],
        (),
        {
            "ci-7f3k-q2w8z": PodOwner("Job", "ci-7f3k"),
            "reindex-7-bq9zl": PodOwner("Job", "reindex-7"),
            "report-29453760-stqnz": PodOwner("Job", "report-29453760"),
            "reindex-kx4vw-r2d2b": PodOwner("Job", "reindex-kx4vw"),  # not listed: its name
        },
        {},
        {"report-29453760": PodOwner("CronJob", "report")},
        grouped=grouped,
    )
    assert mapping.by_pod == {
        "ci-7f3k-q2w8z": REINDEX,
        "report-29453760-stqnz": REPORT,
        "reindex-kx4vw-r2d2b": REINDEX,
    }


def test_no_job_carrying_the_labels_leaves_names_to_decide():
    requests = [_request(REINDEX, app="reindex")]
    assert grouped_jobs(requests, {"reindex-7": ("",)}, ("app",)) == {}
    assert grouped_jobs(requests, {"reindex-7": ("reindex",)}, ()) == {}
    assert ksm_label("app.kubernetes.io/name") == "label_app_kubernetes_io_name"
