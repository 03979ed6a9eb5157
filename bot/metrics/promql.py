"""PromQL builders: every label value is escaped, every query covers a namespace, not a container.

Values come from repository files (namespaces, workload and container names) and from the
environment mapping, so none of them may ever change a query's structure:

- ``quote(value)`` gives a PromQL double-quoted string whose content is exactly ``value``
  (backslash, quote, newline and every control character escaped, Go ``strconv.Unquote`` rules,
  which the PromQL lexer uses in ``promql/parser/lex.go``);
- ``regex_alternatives(values)`` gives an RE2 alternation matching exactly those values
  (``re.escape`` for RE2 metacharacters, anchored by PromQL: ``=~`` is fully anchored);
- label names come only from the configuration and are checked against the label-name grammar.

The query shapes (``cpu``, ``memory``...) are described on each builder; ``docs/metrics.md``
explains why they give the engine the same numbers as the raw samples.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bot.config.metrics import LABEL_NAME, PrometheusConfig

REPLICASET_OWNER_KINDS = ("Deployment", "Rollout")
"""Workload kinds whose pods are owned by ReplicaSets (``kube_replicaset_owner``)."""
POD_HASH_CHARS = "bcdfghjklmnpqrstvwxz2456789"
"""Characters of generated name parts (``k8s.io/apimachinery/pkg/util/rand``, ``alphanums``)."""


def quote(value: str) -> str:
    """``value`` as a PromQL string literal (double quotes, JSON/Go escapes, UTF-8 kept)."""
    return json.dumps(value, ensure_ascii=False)


def regex_alternatives(values: Iterable[str]) -> str:
    """An RE2 pattern matching exactly one of ``values`` (sorted, de-duplicated)."""
    unique = sorted(set(values))
    return "|".join(re.escape(v) for v in unique)


@dataclass(frozen=True, slots=True)
class LabelMatch:
    """One matcher ``label op "value"``; the label is checked, the value escaped."""

    label: str
    op: str
    value: str

    def render(self) -> str:
        if not LABEL_NAME.match(self.label):
            raise ValueError(f"{self.label!r} is not a Prometheus label name")
        if self.op not in ("=", "!=", "=~", "!~"):
            raise ValueError(f"{self.op!r} is not a PromQL matcher")
        return f"{self.label}{self.op}{quote(self.value)}"


def selector(metric: str, matchers: Sequence[LabelMatch]) -> str:
    """``metric{m1,m2,...}``."""
    return f"{metric}{{{','.join(m.render() for m in matchers)}}}"


def chunks(start_s: float, end_s: float, step_s: int, max_points: int) -> list[tuple[float, float]]:
    """Aligned ``(first, last)`` evaluation times covering ``[start_s, end_s]``.

    Times are multiples of ``step_s`` (so repeated fetches hit the same samples and caches);
    each chunk has at most ``max_points`` points and the next starts one step after.
    """
    first = math.ceil(start_s / step_s) * step_s
    last = math.floor(end_s / step_s) * step_s
    out: list[tuple[float, float]] = []
    while first <= last:
        stop = min(last, first + (max_points - 1) * step_s)
        out.append((float(first), float(stop)))
        first = stop + step_s
    return out


def duration(seconds: float) -> str:
    """A PromQL duration in whole milliseconds (``59999ms``), exact for any window."""
    return f"{round(seconds * 1000)}ms"


@dataclass(frozen=True, slots=True)
class RawSelector:
    """The raw samples of one metric's series, as a PromQL range selector (query API) or as
    remote read matchers (``__name__`` first): the same series and samples either way."""

    metric: str
    matchers: tuple[LabelMatch, ...]

    def promql(self, range_s: float) -> str:
        """``metric{...}[range_s - 1ms]``: the samples in ``(t - range_s, t]`` at time ``t``."""
        return f"{selector(self.metric, self.matchers)}[{duration(range_s - 0.001)}]"

    def remote_matchers(self) -> tuple[LabelMatch, ...]:
        return (LabelMatch("__name__", "=", self.metric), *self.matchers)

    @staticmethod
    def window_ms(at_s: float, range_s: float) -> tuple[int, int]:
        """``[start, end]`` in ms that ``promql(range_s)`` covers at ``at_s`` (closed, 2.x)."""
        end = round(at_s * 1000)
        return end - round(range_s * 1000 - 1) + 1, end


@dataclass(frozen=True, slots=True)
class NamespaceQueries:
    """The queries for one namespace and selector: one per metric, whatever the workload count.

    ``pod_regex`` matches the pods of the requested workloads (``name-...``), ``containers`` the
    requested container names; both are RE2 alternations of escaped names.
    """

    config: PrometheusConfig
    namespace: str
    selector: tuple[tuple[str, str], ...]
    workload_names: tuple[str, ...]
    containers: tuple[str, ...]
    hpa_names: tuple[str, ...] = ()
    """The HPAs whose current replicas are read (``replicas_source: hpa``); empty: one named
    like each workload."""

    # ------------------------------------------------------------------ matchers

    def _base(self, extra: Sequence[LabelMatch] = ()) -> list[LabelMatch]:
        labels = self.config.labels
        out = [LabelMatch(labels.namespace, "=", self.namespace)]
        for key, value in self.selector:
            name = labels.cluster if key == "cluster" else key
            out.append(LabelMatch(name, "=", value))
        out.extend(LabelMatch(m.label, m.op, m.value) for m in self.config.matchers)
        out.extend(extra)
        return out

    def _pods(self) -> LabelMatch:
        names = regex_alternatives(self.workload_names)
        return LabelMatch(self.config.labels.pod, "=~", f"(?:{names})-.+")

    def _containers(self) -> LabelMatch:
        return LabelMatch(self.config.labels.container, "=~", regex_alternatives(self.containers))

    def _cadvisor(self) -> list[LabelMatch]:
        extra = [LabelMatch(m.label, m.op, m.value) for m in self.config.cadvisor_matchers]
        return self._base([*extra, self._pods(), self._containers()])

    def _ksm(self, *more: LabelMatch, pods: bool = True) -> list[LabelMatch]:
        extra = [LabelMatch(m.label, m.op, m.value) for m in self.config.kube_state_matchers]
        scope = [self._pods()] if pods else []
        return self._base([*extra, *scope, *more])

    def ksm(self, metric: str, *extra: LabelMatch, pods: bool = True) -> str:
        """``metric{...}`` of kube-state-metrics in this namespace and selector, with ``extra``
        matchers, scoped to the requested workloads' pods when ``pods``."""
        return selector(metric, self._ksm(*extra, pods=pods))

    def cadvisor(self, metric: str) -> str:
        """``metric{...}`` of cAdvisor for the requested workloads' pods and containers."""
        return selector(metric, self._cadvisor())

    @property
    def _by(self) -> str:
        labels = self.config.labels
        return f"{labels.namespace}, {labels.pod}, {labels.container}"

    @property
    def _step_range(self) -> str:
        """Half-open ``(t - step, t]`` in Prometheus 2.x's closed ranges: one raw sample per step."""
        return duration(self.config.step_s - 0.001)

    # ------------------------------------------------------------------ range queries

    def cpu(self) -> str:
        """Cores per (namespace, pod, container): ``max by (...) (rate(cpu[W]))``, W = rate window."""
        window = duration(self.config.cpu_rate_window_s or self.config.step_s)
        inner = selector(self.config.metrics.cpu_usage, self._cadvisor())
        return f"max by ({self._by}) (rate({inner}[{window}]))"

    def memory(self, step_s: float | None = None) -> str:
        """Working-set bytes per (namespace, pod, container): the highest sample of each step."""
        inner = selector(self.config.metrics.memory_working_set, self._cadvisor())
        window = duration((step_s or self.config.step_s) - 0.001)
        return f"max by ({self._by}) (max_over_time({inner}[{window}]))"

    def cpu_raw(self) -> RawSelector:
        """Raw CPU counter samples of the requested containers."""
        return RawSelector(self.config.metrics.cpu_usage, tuple(self._cadvisor()))

    def memory_raw(self) -> RawSelector:
        """Raw working-set samples of the requested containers."""
        return RawSelector(self.config.metrics.memory_working_set, tuple(self._cadvisor()))

    def _restarts_selector(self, pods: Sequence[str] | None = None) -> str:
        labels = self.config.labels
        scope = [LabelMatch(labels.pod, "=~", regex_alternatives(pods))] if pods is not None else []
        return selector(
            self.config.metrics.restarts,
            self._ksm(
                LabelMatch(labels.container, "=~", regex_alternatives(self.containers)),
                *scope,
            ),
        )

    def restart_counts(self, window_s: float) -> str:
        """Restarts per (namespace, pod, container) over the window (instant query at its end)."""
        inner = self._restarts_selector()
        return f"max by ({self._by}) (changes({inner}[{duration(window_s)}])) > 0"

    def oom_reasons(self, pods: Sequence[str]) -> str:
        """At each step where kube-state-metrics reports ``pods``' last termination as
        ``OOMKilled``, the memory request reported in that step (0 when unknown).

        No restart-count condition: which restart was the OOM kill is decided on the client from
        this series and ``restart_series`` (``bot/metrics/restarts.py``, ``oom_kills``), so a
        restart is seen whatever the scrape interval relative to the step. Sent only for pods
        whose containers restarted (``restart_counts``), so its cost follows the restarts.
        """
        labels = self.config.labels
        containers = LabelMatch(labels.container, "=~", regex_alternatives(self.containers))
        only = LabelMatch(labels.pod, "=~", regex_alternatives(pods))
        reason = selector(
            self.config.metrics.last_terminated_reason,
            self._ksm(containers, only, LabelMatch("reason", "=", "OOMKilled")),
        )
        killed = f"(max by ({self._by}) (max_over_time({reason}[{self._step_range}])) == 1)"
        request = selector(
            self.config.metrics.resource_requests,
            self._ksm(containers, only, LabelMatch("resource", "=", "memory")),
        )
        with_request = (
            f"(max by ({self._by}) (max_over_time({request}[{self._step_range}])) "
            f"and on ({self._by}) {killed})"
        )
        return f"{with_request} or on ({self._by}) ({killed} * 0)"

    def restart_series(self, pods: Sequence[str]) -> str:
        """Restart counter of ``pods`` per (namespace, pod, container): the highest value per step.

        Sent only for pods whose containers restarted; the client turns its rises into restart
        times (``bot/metrics/restarts.py``) for crash loops and counter-reset checks.
        """
        inner = self._restarts_selector(pods)
        return f"max by ({self._by}) (max_over_time({inner}[{self._step_range}]))"

    def cpu_resets(self, window_s: float) -> str:
        """CPU counter resets per (namespace, pod, container) over the window (range mode only).

        In raw mode the client sees the resets in the raw samples; ``resets()`` gives the count
        where only server-side functions are read.
        """
        inner = selector(self.config.metrics.cpu_usage, self._cadvisor())
        return f"max by ({self._by}) (resets({inner}[{duration(window_s)}])) > 0"

    def hpa_replicas(self) -> str:
        """Current replicas per HPA named like a requested workload (``replicas_source: hpa``).

        Assumes each HPA is named after its ``scaleTargetRef`` (the usual convention, and what
        ``kubectl autoscale`` does): kube-state-metrics' HPA series carry no target label. A
        KEDA ScaledObject's HPA is ``keda-hpa-<name>`` (``HistoryRequest.hpa``).
        """
        labels = self.config.labels
        raw = self.hpa_replicas_raw()
        inner = selector(raw.metric, raw.matchers)
        return f"max by ({labels.namespace}, {labels.hpa}) (max_over_time({inner}[{self._step_range}]))"

    def hpa_replicas_raw(self) -> RawSelector:
        """Raw current-replica samples of the requested HPAs (``hpa_names``, else those named
        like a requested workload)."""
        wanted = self.hpa_names or self.workload_names
        names = LabelMatch(self.config.labels.hpa, "=~", regex_alternatives(wanted))
        return RawSelector(
            self.config.metrics.hpa_current_replicas, tuple(self._ksm(names, pods=False))
        )

    def replicas(self, kind: str) -> str:
        """Replica count per workload of ``kind`` (Deployment or StatefulSet) in this namespace."""
        labels = self.config.labels
        raw = self.replicas_raw(kind)
        label = labels.statefulset if kind == "StatefulSet" else labels.deployment
        inner = selector(raw.metric, raw.matchers)
        return f"max by ({labels.namespace}, {label}) (max_over_time({inner}[{self._step_range}]))"

    def replicas_raw(self, kind: str) -> RawSelector:
        """Raw replica samples of the requested workloads of ``kind``."""
        labels = self.config.labels
        if kind == "StatefulSet":
            metric, label = self.config.metrics.statefulset_replicas, labels.statefulset
        else:
            metric, label = self.config.metrics.deployment_replicas, labels.deployment
        names = LabelMatch(label, "=~", regex_alternatives(self.workload_names))
        return RawSelector(metric, tuple(self._ksm(names, pods=False)))

    # ------------------------------------------------------------------ instant queries

    def pod_owners(self, window_s: float) -> str:
        """Every (pod, owner kind, owner name) seen in the window (instant query at its end)."""
        labels = self.config.labels
        inner = selector(self.config.metrics.pod_owner, self._ksm())
        by = f"{labels.namespace}, {labels.pod}, {labels.owner_kind}, {labels.owner_name}"
        return f"max by ({by}) (max_over_time({inner}[{duration(window_s)}]))"

    def replicaset_owners(self, window_s: float) -> str:
        """Every (ReplicaSet, owner kind, owner) of the requested Deployments and Argo Rollouts
        (``REPLICASET_OWNER_KINDS``; a Rollout's canary and stable ReplicaSets alike) seen in the
        window: one query whatever the kinds."""
        labels = self.config.labels
        inner = selector(
            self.config.metrics.replicaset_owner,
            self._ksm(
                LabelMatch(labels.owner_kind, "=~", regex_alternatives(REPLICASET_OWNER_KINDS)),
                LabelMatch(labels.owner_name, "=~", regex_alternatives(self.workload_names)),
                pods=False,
            ),
        )
        by = f"{labels.namespace}, {labels.replicaset}, {labels.owner_kind}, {labels.owner_name}"
        return f"max by ({by}) (max_over_time({inner}[{duration(window_s)}]))"

    def job_owners(self, window_s: float) -> str:
        """Every (Job, owner kind, owner) of the namespace's CronJob-owned Jobs seen in the
        window (``kube_job_owner``; ``bot.metrics.jobs``): one query whatever the CronJobs."""
        labels = self.config.labels
        inner = selector(
            self.config.metrics.job_owner,
            self._ksm(LabelMatch(labels.owner_kind, "=", "CronJob"), pods=False),
        )
        by = f"{labels.namespace}, {labels.job_name}, {labels.owner_kind}, {labels.owner_name}"
        return f"max by ({by}) (max_over_time({inner}[{duration(window_s)}]))"

    def job_labels(self, window_s: float, names: tuple[str, ...]) -> str:
        """Every Job of the namespace seen in the window with its values of the grouping labels
        ``names`` (``kube_job_labels``, ``bot.metrics.job_groups``): one query per namespace."""
        labels = self.config.labels
        inner = selector(self.config.metrics.job_labels, self._ksm(pods=False))
        by = ", ".join((labels.namespace, labels.job_name, *names))
        return f"max by ({by}) (max_over_time({inner}[{duration(window_s)}]))"


def pod_name_pattern(kind: str, name: str) -> re.Pattern[str]:
    """The controller's pod-name pattern, used when kube-state-metrics has no owner for a pod.

    Deployment and Argo Rollout: ``<name>-<pod-template-hash>-<5 chars>`` (ReplicaSet
    controller, ``pkg/controller/replicaset``, names from ``GenerateName`` + ``rand.String(5)``;
    Argo Rollouts names its ReplicaSets the same way); StatefulSet: ``<name>-<ordinal>``
    (``pkg/controller/statefulset/stateful_set_utils.go``); DaemonSet: ``<name>-<5 chars>``
    (``GenerateName`` of the DaemonSet controller).
    """
    chars = f"[{POD_HASH_CHARS}]"
    if kind == "StatefulSet":
        return re.compile(rf"{re.escape(name)}-(?:0|[1-9][0-9]*)")
    if kind == "DaemonSet":
        return re.compile(rf"{re.escape(name)}-{chars}{{5}}")
    return re.compile(rf"{re.escape(name)}-{chars}{{1,10}}-{chars}{{5}}")


def replicaset_name_pattern(name: str) -> re.Pattern[str]:
    """``<name>-<pod-template-hash>``: a ReplicaSet name the Deployment (or Argo Rollouts)
    controller makes."""
    return re.compile(rf"{re.escape(name)}-[{POD_HASH_CHARS}]{{1,10}}")
