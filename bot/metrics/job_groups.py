"""Bare Jobs grouped by labels (``prometheus.job_grouping_labels``), as KRR's Job grouping does.

A generator (a CI pipeline, an operator, ``kubectl create job``) may name a bare Job's runs in
ways no name pattern covers; they share labels instead. With grouping labels set, the Jobs whose
``kube_job_labels`` carry the declared Job's values of every grouping label are its runs.
kube-state-metrics exports a Job's label ``app.kubernetes.io/name`` as
``label_app_kubernetes_io_name`` only when its ``--metric-labels-allowlist`` names it
(``jobs=[app.kubernetes.io/name]``); when no Job of the namespace carries them, runs are found
by name (``bot.metrics.jobs``) and the Job gets a note saying so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from bot.metrics.source import HistoryRequest
from bot.model import Note, WorkloadRef

NOTE_CODE = "job-labels-missing"


def ksm_label(name: str) -> str:
    """The Prometheus label kube-state-metrics exports Kubernetes label ``name`` as."""
    return "label_" + re.sub(r"[^a-zA-Z0-9_]", "_", name)


def grouped_jobs(
    requests: Sequence[HistoryRequest],
    job_labels: Mapping[str, tuple[str, ...]],
    keys: Sequence[str],
) -> dict[str, WorkloadRef | None]:
    """Each Job kube-state-metrics lists with every grouping label -> the requested bare Job
    whose declared labels have the same values (None: none has). Empty when no Job carries
    them (the series is absent or the allowlist does not name them): names decide then."""
    if not keys:
        return {}
    carried = {job: values for job, values in job_labels.items() if all(values)}
    if not carried:
        return {}
    groups: dict[tuple[str, ...], WorkloadRef] = {}
    for request in requests:
        values = tuple(request.labels.get(k, "") for k in keys)
        if request.ref.kind == "Job" and all(values):
            groups.setdefault(values, request.ref)
    return {job: groups.get(values) for job, values in carried.items()}


def missing_note(keys: Sequence[str]) -> Note:
    """The note of a bare Job whose runs were found by name although labels were asked for."""
    names = ", ".join(keys)
    return Note(
        NOTE_CODE,
        f"no Job carries kube_job_labels {names} (kube-state-metrics "
        "--metric-labels-allowlist); runs found by name",
    )
