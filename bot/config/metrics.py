"""Prometheus connection and query settings (bot settings; secrets come from the environment).

Defaults match kube-prometheus-stack (cAdvisor via the kubelet job, kube-state-metrics v2).
Thanos, Mimir and VictoriaMetrics speak the same HTTP API; ``docs/metrics.md`` lists what each
needs (path prefix in ``url``, ``X-Scope-OrgID`` in ``headers``, ``extra_params``).
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from bot.config.base import ConfigModel
from bot.model import MIB

LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
"""A Prometheus label name (``model/labels.go``, ``LabelNameRE`` in prometheus/common)."""

METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
"""A Prometheus metric name (``MetricNameRE`` in prometheus/common)."""

MAX_POINTS_PER_SERIES = 11_000
"""Prometheus refuses a range query with ``(end - start) / step`` above this (``api.go``)."""


def _check_label(value: str) -> str:
    if not LABEL_NAME.match(value):
        raise ValueError(f"{value!r} is not a Prometheus label name")
    return value


LabelName = Annotated[str, AfterValidator(_check_label)]
"""A Prometheus label name, ``[a-zA-Z_][a-zA-Z0-9_]*``."""


class PrometheusAuth(ConfigModel):
    """Credentials; the secret itself is never in the file, only where to find it."""

    bearer_token_env: str | None = Field(
        None, description="Environment variable holding a bearer token."
    )
    bearer_token_file: str | None = Field(
        None, description="File holding a bearer token (e.g. a service-account token)."
    )
    basic_username: str | None = Field(None, description="Basic-auth user name.")
    basic_password_env: str | None = Field(
        None, description="Environment variable holding the basic-auth password."
    )

    @model_validator(mode="after")
    def _one_kind(self) -> PrometheusAuth:
        bearer = self.bearer_token_env is not None or self.bearer_token_file is not None
        basic = self.basic_username is not None or self.basic_password_env is not None
        if self.bearer_token_env and self.bearer_token_file:
            raise ValueError("set bearer_token_env or bearer_token_file, not both")
        if bearer and basic:
            raise ValueError("set a bearer token or basic auth, not both")
        if basic and not (self.basic_username and self.basic_password_env):
            raise ValueError("basic auth needs basic_username and basic_password_env")
        return self


class Matcher(ConfigModel):
    """One extra label matcher added to queries, e.g. ``{label: job, op: "=", value: kubelet}``."""

    label: LabelName = Field(description="Label name.")
    op: Literal["=", "!=", "=~", "!~"] = Field("=", description="PromQL matcher operator.")
    value: str = Field(description="Value (a RE2 regex for =~ and !~); escaped when quoted.")


class MetricNames(ConfigModel):
    """Metric names, for stacks that rename them with recording or relabelling rules."""

    cpu_usage: str = Field(
        "container_cpu_usage_seconds_total", description="cAdvisor CPU counter (seconds)."
    )
    memory_working_set: str = Field(
        "container_memory_working_set_bytes", description="cAdvisor working set (bytes)."
    )
    restarts: str = Field(
        "kube_pod_container_status_restarts_total",
        description="kube-state-metrics container restarts counter.",
    )
    last_terminated_reason: str = Field(
        "kube_pod_container_status_last_terminated_reason",
        description="kube-state-metrics last termination reason (``reason`` label).",
    )
    resource_requests: str = Field(
        "kube_pod_container_resource_requests",
        description="kube-state-metrics container requests (``resource`` label).",
    )
    pod_owner: str = Field("kube_pod_owner", description="kube-state-metrics pod owner.")
    replicaset_owner: str = Field(
        "kube_replicaset_owner", description="kube-state-metrics ReplicaSet owner."
    )
    job_owner: str = Field(
        "kube_job_owner", description="kube-state-metrics Job owner (a CronJob's runs)."
    )
    job_labels: str = Field(
        "kube_job_labels",
        description="kube-state-metrics Job labels (``label_<name>``, read with "
        "``job_grouping_labels``).",
    )
    deployment_replicas: str = Field(
        "kube_deployment_status_replicas", description="Replicas of a Deployment."
    )
    statefulset_replicas: str = Field(
        "kube_statefulset_status_replicas", description="Replicas of a StatefulSet."
    )
    hpa_current_replicas: str = Field(
        "kube_horizontalpodautoscaler_status_current_replicas",
        description="Current replicas of an HPA (read with ``replicas_source: hpa``).",
    )
    resource_limits: str = Field(
        "kube_pod_container_resource_limits",
        description="kube-state-metrics container limits (when merged values run).",
    )
    hpa_min_replicas: str = Field(
        "kube_horizontalpodautoscaler_spec_min_replicas",
        description="minReplicas of an HPA (when merged values run).",
    )
    hpa_max_replicas: str = Field(
        "kube_horizontalpodautoscaler_spec_max_replicas",
        description="maxReplicas of an HPA (when merged values run).",
    )
    hpa_target_metric: str = Field(
        "kube_horizontalpodautoscaler_spec_target_metric",
        description="Target of an HPA metric (when merged values run).",
    )
    cpu_throttled_periods: str = Field(
        "container_cpu_cfs_throttled_periods_total",
        description="cAdvisor throttled CFS periods (verification of a CPU limit).",
    )
    cpu_periods: str = Field(
        "container_cpu_cfs_periods_total",
        description="cAdvisor CFS periods (verification of a CPU limit).",
    )

    @field_validator("*")
    @classmethod
    def _metric(cls, value: str) -> str:
        if not METRIC_NAME.match(value):
            raise ValueError(f"{value!r} is not a Prometheus metric name")
        return value


class LabelNames(ConfigModel):
    """Label names, for stacks that relabel them."""

    namespace: str = Field("namespace", description="Namespace label.")
    pod: str = Field("pod", description="Pod label.")
    container: str = Field("container", description="Container label.")
    cluster: str = Field(
        "cluster", description="What an environment selector's ``cluster`` key matches."
    )
    deployment: str = Field("deployment", description="Deployment label of kube-state-metrics.")
    statefulset: str = Field("statefulset", description="StatefulSet label of kube-state-metrics.")
    replicaset: str = Field("replicaset", description="ReplicaSet label of kube-state-metrics.")
    job_name: str = Field("job_name", description="Job label of kube-state-metrics.")
    owner_kind: str = Field("owner_kind", description="Owner kind label of kube-state-metrics.")
    owner_name: str = Field("owner_name", description="Owner name label of kube-state-metrics.")
    hpa: str = Field("horizontalpodautoscaler", description="HPA name label of kube-state-metrics.")

    _names = field_validator("*")(_check_label)


class PrometheusConfig(ConfigModel):
    """How to reach Prometheus (or Thanos, Mimir, VictoriaMetrics) and what to ask."""

    url: str | None = Field(
        None,
        description="Base URL of the HTTP API, with any path prefix (``.../prometheus`` for Mimir).",
    )
    auth: PrometheusAuth = PrometheusAuth()
    headers: dict[str, str] = Field(
        default_factory=dict, description="Extra headers, e.g. ``X-Scope-OrgID: tenant``."
    )
    headers_from_env: dict[str, str] = Field(
        default_factory=dict, description="Extra headers whose value is read from an env var."
    )
    ca_bundle: str | None = Field(None, description="CA bundle file to verify the server with.")
    verify_tls: bool = Field(True, description="Verify the server's TLS certificate.")
    extra_params: dict[str, str] = Field(
        default_factory=dict,
        description="Extra form parameters on every query, e.g. Thanos ``partial_response``.",
    )
    metrics: MetricNames = MetricNames()
    labels: LabelNames = LabelNames()
    matchers: tuple[Matcher, ...] = Field((), description="Matchers added to every query.")
    cadvisor_matchers: tuple[Matcher, ...] = Field(
        (), description='Matchers added to cAdvisor queries, e.g. ``job="kubelet"``.'
    )
    kube_state_matchers: tuple[Matcher, ...] = Field(
        (),
        description='Matchers added to kube-state-metrics queries, e.g. ``job="kube-state-metrics"``.',
    )
    query_mode: Literal["raw", "range"] = Field(
        "raw",
        description="``raw``: fetch raw samples and compute per-step values on the client "
        "(about 3x less server time); ``range``: server-side ``rate()``/``max_over_time()`` "
        "range queries (for backends that limit raw sample reads).",
    )
    raw_api: Literal["auto", "remote_read", "query"] = Field(
        "auto",
        description="Where ``query_mode: raw`` reads raw samples: ``remote_read`` "
        "(``/api/v1/read``, protobuf: about 10x cheaper to decode than JSON; Prometheus, Mimir), "
        "``query`` (instant queries of range vectors, JSON: any Prometheus-compatible API), "
        "``auto``: remote read, and the query API from the first answer that is not a remote "
        "read answer on. Both give the same samples.",
    )
    replicas_source: Literal["workload", "hpa"] = Field(
        "workload",
        description="Replica history from the workload's status (``workload``) or from the "
        "HPA's ``status.currentReplicas`` (``hpa``; the HPA must be named like its "
        "``scaleTargetRef``; workloads without such an HPA get no replica history).",
    )
    job_grouping_labels: tuple[str, ...] = Field(
        (),
        description="Labels that group a bare Job's runs: the Jobs whose ``kube_job_labels`` "
        "carry the declared Job's values of every one of these labels are its runs (one more "
        "instant query per namespace). kube-state-metrics exports them only when its "
        "``--metric-labels-allowlist`` names them; without them, and when empty, runs are "
        "found by name.",
    )
    window_days: float = Field(14.0, gt=0, le=90, description="History window in days.")
    step_s: int = Field(60, ge=1, description="Range-query step in seconds.")
    memory_step_s: int | None = Field(
        None,
        ge=1,
        description="Step of the memory series, seconds; default ``step_s``. A multiple of "
        "``step_s`` keeps every peak (each value is the highest sample of its step) and cuts "
        "the memory data by that factor, but usage percentiles then see fewer samples.",
    )
    cpu_rate_window_s: int | None = Field(
        None,
        ge=1,
        description="Range of ``rate()`` for CPU, seconds; default ``step_s``. "
        "Must cover at least two scrapes.",
    )
    max_points_per_query: int = Field(
        10_000,
        ge=10,
        le=MAX_POINTS_PER_SERIES,
        description="Points per series per range query; longer windows are split into chunks.",
    )
    concurrency: int = Field(4, ge=1, le=64, description="Queries in flight at once.")
    timeout_s: float = Field(
        120.0,
        gt=0,
        description="Longest time one request may take, seconds: connect, send and the whole "
        "answer (a server that trickles its answer is cut off too); also the server's own "
        "query timeout.",
    )
    connect_timeout_s: float = Field(5.0, gt=0, description="Connect timeout, seconds.")
    fetch_timeout_s: float = Field(
        600.0,
        gt=0,
        description="Longest time one fetch (every query of one repository, retries and their "
        "waits included) may take, seconds; then the fetch fails as an outage.",
    )
    follow_redirects: Literal["same-host", "off", "any"] = Field(
        "same-host",
        description="Redirects of a query: ``same-host`` follows those to the configured host "
        "(and port; ``http`` to ``https`` allowed), ``off`` follows none, ``any`` follows every "
        "one, without ``Authorization``, basic auth or any ``headers_from_env`` header to "
        "another host. A redirect not followed fails the fetch, naming where it pointed. At "
        "most 5 per request; ``timeout_s`` bounds the whole exchange.",
    )
    max_response_bytes: int = Field(
        256 * MIB,
        ge=1024,
        description="Largest answer to one query, bytes (decoded); a larger one is refused as "
        "soon as its ``Content-Length`` or the bytes read pass the bound, naming the query. "
        "256 MiB: 1.8x what remote read answers for 3,000 containers in one namespace "
        "(``docs/metrics.md``).",
    )
    retries: int = Field(3, ge=0, le=10, description="Retries of a query on 5xx, 429 or network.")
    backoff_s: float = Field(
        1.0, ge=0, description="First retry delay, seconds; doubles each retry."
    )
    max_backoff_s: float = Field(
        30.0, ge=0, description="Longest wait between retries, Retry-After included."
    )
    gzip: bool = Field(
        True,
        description="Ask for gzip responses; turn off for a Prometheus on the same host "
        "(gzip costs about 2-3x on loopback).",
    )
    min_history_days: float = Field(
        7.0, ge=0, description="History shorter than this gets a ``short-history`` note."
    )
