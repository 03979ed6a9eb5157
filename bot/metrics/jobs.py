"""Which CronJob or bare Job a Job run belongs to: kube-state-metrics' owner chain, then names.

A pod of a run is owned by a Job (``kube_pod_owner{owner_kind="Job", owner_name=J}``):

1. ``kube_job_owner{job_name=J, owner_kind="CronJob", owner_name=N}`` -> CronJob ``N``;
2. otherwise Job ``J`` itself when it is requested, or the requested bare Job ``N`` whose runs
   a generator names ``N-<suffix>`` (a Helm revision, a timestamp, a ``generateName`` hash:
   digits, or up to 10 of the characters Kubernetes generates names from). With
   ``prometheus.job_grouping_labels`` set and Jobs carrying them in ``kube_job_labels``, a Job
   that carries them belongs to the bare Job with the same values instead, or to none
   (``bot.metrics.job_groups``). A Job a CronJob owns is never grouped under a bare Job.
3. A Job kube-state-metrics never saw (no ``kube_job_owner``) whose name is
   ``<cronjob>-<digits>`` (the CronJob controller's scheduled-time suffix) -> that CronJob.

The owners of every Job in the namespace are one instant query (``promql.job_owners``), sent
once per namespace batch whatever the number of CronJobs, Jobs and containers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from bot.metrics.promql import POD_HASH_CHARS as NAME_CHARS
from bot.model import WorkloadRef

JOB_KINDS: Final = ("CronJob", "Job")
"""Workload kinds whose pods are owned by Jobs."""


def cronjob_job_pattern(name: str) -> re.Pattern[str]:
    """``<cronjob>-<scheduled time in minutes>``: a Job the CronJob controller makes."""
    return re.compile(rf"{re.escape(name)}-[0-9]+")


def generated_job_pattern(name: str) -> re.Pattern[str]:
    """``<job>-<digits or a generated part>``: a Job a generator derives from ``name``."""
    return re.compile(rf"{re.escape(name)}-(?:[0-9]+|[{NAME_CHARS}]{{1,10}})")


def job_pod_pattern(kind: str, name: str) -> re.Pattern[str]:
    """The pod-name pattern of a CronJob's or a Job's runs, for pods kube-state-metrics never
    saw: CronJob ``<name>-<digits>-<5 chars>``; Job ``<name>-<5 chars>``, or with a
    generator's suffix ``<name>-<suffix>-<5 chars>`` (the Job controller's ``GenerateName``)."""
    chars = f"[{NAME_CHARS}]{{5}}"
    if kind == "CronJob":
        return re.compile(rf"{re.escape(name)}-[0-9]+-{chars}")
    return re.compile(rf"{re.escape(name)}(?:-(?:[0-9]+|[{NAME_CHARS}]{{1,10}}))?-{chars}")


def job_workload(
    job: str,
    by_name: Mapping[tuple[str, str], WorkloadRef],
    job_owners: Mapping[str, tuple[str, str]],
    grouped: Mapping[str, WorkloadRef | None] | None = None,
) -> WorkloadRef | None:
    """The requested workload Job ``job`` ran for (see the module doc); ``job_owners`` is each
    Job's (owner kind, owner name) as kube-state-metrics saw it, ``grouped`` the bare Job its
    labels group it under."""
    owner = job_owners.get(job)
    if owner is not None and owner[0] == "CronJob":
        return by_name.get(owner)
    if (exact := by_name.get(("Job", job))) is not None:
        return exact
    if grouped is not None and job in grouped:
        return grouped[job]
    if owner is None:
        for (kind, name), ref in by_name.items():
            if kind == "CronJob" and cronjob_job_pattern(name).fullmatch(job):
                return ref
    for (kind, name), ref in by_name.items():
        if kind == "Job" and generated_job_pattern(name).fullmatch(job):
            return ref
    return None
