"""Why Prometheus gives no history: per metric family the bot reads, whether its series exist,
which labels they carry, whether each environment's selector matches them, and the fix.

When every workload of a plan says "no CPU samples", the cause is nearly always one of a few
set-up differences between the cluster's Prometheus and the defaults (kube-prometheus-stack):
a metric renamed by a recording rule, a label relabelled (``container_name``, ``pod_name``,
``exported_namespace``), an environment selector (``cluster=prod``) that matches no series, a
``job`` matcher of another stack, or an API answering for an empty tenant (Mimir without
``X-Scope-OrgID``). ``diagnose`` asks a few bounded instant queries and names which one it is:

- existence: one ``count by (__name__) (last_over_time({__name__=~"..."}[L]))`` for every
  family at once (L = ``LOOKBACK_S`` before ``at_s``; families absent there are looked for
  once more over the whole history window: a scrape that stopped);
- labels: per present family, how many series carry each label the queries group or match by
  (one query per family); for a label no series carries, three sample series name the labels
  they do carry, and a look-alike (``container_name`` for ``container``) is named in the fix;
- selectors: per environment, the series a family's full matcher set selects (namespaces,
  selector, configured matchers); when none, each group of matchers is dropped in turn, and the
  values the series do carry for the culprit's labels are listed (``topk``: at most
  ``MAX_VALUES``);
- scrape interval: the median samples per series over L of the CPU counter and of the restart
  counter, against the CPU rate window of ``query_mode: range``.

Every answer is a count or a ``topk``: bounded whatever the cluster's size. Pure of output
formatting: ``Diagnosis`` is data; ``bot/commands/doctor.py`` prints it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from bot.config.metrics import PrometheusConfig
from bot.metrics.client import ApiResponse
from bot.metrics.families import Family, families
from bot.metrics.promql import LabelMatch, duration, quote, regex_alternatives, selector
from bot.metrics.source import HistoryRequest

LOOKBACK_S = 3600.0
"""How far before ``at_s`` series are looked for: a few scrapes at any usual interval."""

MAX_VALUES = 5
"""Label values listed when a matcher selects nothing (the most common ones)."""

SAMPLE_SERIES = 3
"""Series whose label names are read when a label is missing."""

ALIASES: Mapping[str, tuple[str, ...]] = {
    "namespace": ("exported_namespace", "kubernetes_namespace", "k8s_namespace", "ns"),
    "pod": ("pod_name", "exported_pod", "kubernetes_pod_name", "k8s_pod"),
    "container": ("container_name", "exported_container", "kubernetes_container_name"),
    "cluster": ("cluster_name", "k8s_cluster", "kubernetes_cluster", "cluster_id", "env"),
}
"""Names other stacks give the labels (cAdvisor before Kubernetes 1.16, kube-state-metrics
scraped without ``honor_labels``, Datadog/OpenTelemetry conventions)."""

INTERMITTENT = frozenset({"job_owner"})
"""Families whose series live as long as their object: a CronJob's Jobs may all be gone
(``ttlSecondsAfterFinished``) between runs, so they are looked for over the whole window."""

Severity = Literal["error", "warning"]


class Querier(Protocol):
    """What the doctor needs of ``PrometheusClient``: instant queries."""

    def query(self, query: str, *, time_s: float, matrix: bool = False) -> ApiResponse: ...


@dataclass(frozen=True, slots=True)
class Scope:
    """One environment's reach: its namespaces and selector."""

    environment: str
    namespaces: tuple[str, ...]
    selector: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class Problem:
    """Something that keeps series from a plan, and the setting or relabelling that fixes it."""

    severity: Severity
    metric: str
    message: str
    fix: str
    environment: str | None = None


@dataclass(frozen=True, slots=True)
class FamilyReport:
    """What was found of one family."""

    family: Family
    series: int
    """Series seen in the lookback, whatever their labels."""
    labels_seen: tuple[str, ...]
    """Label names the series carry (those the queries use, and a sample's when one lacks)."""
    scopes: tuple[tuple[str, int], ...]
    """(environment, series its full matchers select); absent when not checked."""
    scrape_interval_s: float | None
    problems: tuple[Problem, ...]

    @property
    def status(self) -> Literal["ok", "error", "warning"]:
        if any(p.severity == "error" for p in self.problems):
            return "error"
        return "warning" if self.problems else "ok"


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """Every family's report, problems of the whole API, and when and where it was asked."""

    url: str
    at_s: float
    lookback_s: float
    families: tuple[FamilyReport, ...]
    problems: tuple[Problem, ...] = ()

    @property
    def ok(self) -> bool:
        """No required family missing, in no environment."""
        return not any(p.severity == "error" for p in self.all_problems())

    def all_problems(self) -> list[Problem]:
        return [*self.problems, *(p for f in self.families for p in f.problems)]


def scopes_of(requests: Iterable[HistoryRequest]) -> tuple[Scope, ...]:
    """One scope per environment (and selector) of ``requests``, namespaces sorted."""
    found: dict[tuple[str, tuple[tuple[str, str], ...]], set[str]] = {}
    for r in requests:
        key = (r.ref.environment, tuple(sorted(r.selector.items())))
        found.setdefault(key, set()).add(r.ref.namespace)
    return tuple(Scope(env, tuple(sorted(ns)), sel) for (env, sel), ns in found.items())


class _Asker:
    """Instant queries at one time, answers as {labels: value}."""

    def __init__(
        self, client: Querier, config: PrometheusConfig, at_s: float, lookback_s: float
    ) -> None:
        self.client, self.config, self.at_s = client, config, at_s
        self.window = duration(lookback_s)

    def vector(self, query: str) -> list[tuple[dict[str, str], float]]:
        result: Any = self.client.query(query, time_s=self.at_s).data.get("result", [])
        return [(dict(r.get("metric", {})), float(r["value"][1])) for r in result]

    def last(self, metric: str, matchers: Sequence[LabelMatch], window: str | None = None) -> str:
        return f"last_over_time({selector(metric, matchers)}[{window or self.window}])"

    def count(self, metric: str, matchers: Sequence[LabelMatch]) -> int:
        answer = self.vector(f"count({self.last(metric, matchers)})")
        return int(answer[0][1]) if answer else 0

    def values(self, metric: str, matchers: Sequence[LabelMatch], label: str) -> list[str]:
        query = f"topk({MAX_VALUES}, count by ({label}) ({self.last(metric, matchers)}))"
        answer = sorted(self.vector(query), key=lambda a: (-a[1], a[0].get(label, "")))
        return [m[label] for m, _ in answer if m.get(label)]

    def sample_labels(self, metric: str) -> set[str]:
        answer = self.vector(f"topk({SAMPLE_SERIES}, {self.last(metric, [])})")
        return {name for m, _ in answer for name in m if name != "__name__"}


def _source_matchers(config: PrometheusConfig, family: Family) -> list[LabelMatch]:
    extra = config.cadvisor_matchers if family.source == "cadvisor" else config.kube_state_matchers
    return [LabelMatch(m.label, m.op, m.value) for m in (*config.matchers, *extra)]


def _look_alike(label: str, field: str, seen: Iterable[str]) -> str | None:
    seen = sorted(seen)
    for alias in (field, *ALIASES.get(field, ())):
        if alias in seen and alias != label:
            return alias
    return next((s for s in seen if label in s and s != label), None)


def _missing_label(family: Family, field: str, label: str, seen: set[str]) -> Problem:
    alike = _look_alike(label, field, seen)
    severity: Severity = "error" if family.required else "warning"
    if alike is not None:
        return Problem(
            severity,
            family.metric,
            f"series carry `{alike}`, not `{label}`",
            f"set prometheus.labels.{field}: {alike} (when every metric uses it), or add a "
            f"metric_relabel_configs rule copying {alike} to {label}",
        )
    names = ", ".join(sorted(seen)) or "none"
    return Problem(
        severity,
        family.metric,
        f"no series carries a `{label}` label (labels seen: {names})",
        f"relabel the label that holds it to {label}, or set prometheus.labels.{field}",
    )


def _scope_groups(
    config: PrometheusConfig, family: Family, scope: Scope
) -> list[tuple[str, list[LabelMatch]]]:
    """The matcher groups of ``family``'s queries in ``scope``: namespaces, selector, matchers."""
    lb = config.labels
    groups: list[tuple[str, list[LabelMatch]]] = []
    if scope.namespaces:
        names = regex_alternatives(scope.namespaces)
        groups.append(("namespace", [LabelMatch(lb.namespace, "=~", names)]))
    chosen = [LabelMatch(lb.cluster if k == "cluster" else k, "=", v) for k, v in scope.selector]
    if chosen:
        groups.append(("selector", chosen))
    configured = _source_matchers(config, family)
    if configured:
        groups.append(("matchers", configured))
    return groups


def _fix_for(group: str, match: LabelMatch, family: Family) -> str:
    if group == "selector":
        return (
            "correct environments[].selector in the opt-in file (or prometheus.labels.cluster "
            "when the label has another name); a Prometheus of one cluster needs no selector"
        )
    if group == "matchers":
        which = "cadvisor_matchers" if family.source == "cadvisor" else "kube_state_matchers"
        return f"correct prometheus.matchers / prometheus.{which}"
    return (
        "check the namespaces the repository declares; kube-state-metrics scraped without "
        "honor_labels keeps the real namespace in exported_namespace (set honor_labels: true)"
    )


def _check_scope(
    ask: _Asker, config: PrometheusConfig, family: Family, scope: Scope
) -> tuple[int, list[Problem]]:
    groups = _scope_groups(config, family, scope)
    every = [m for _, g in groups for m in g]
    found = ask.count(family.metric, every)
    if found or not groups:
        return found, []
    severity: Severity = "error" if family.required else "warning"
    for name, group in groups:
        others = [m for other, g in groups if other != name for m in g]
        if not ask.count(family.metric, others):
            continue
        problems = []
        for match in group:
            if ask.count(family.metric, [*others, match]):
                continue
            seen = ask.values(family.metric, others, match.label)
            listed = ", ".join(seen) if seen else f"none carries `{match.label}`"
            problems.append(
                Problem(
                    severity,
                    family.metric,
                    f"{match.render()} matches 0 series; {match.label} values seen: {listed}",
                    _fix_for(name, match, family),
                    scope.environment,
                )
            )
        if problems:
            return 0, problems
    described = ", ".join(m.render() for m in every)
    return 0, [
        Problem(
            severity,
            family.metric,
            f"{{{described}}} matches 0 series",
            "no single matcher is the cause: check the namespaces, selector and matchers",
            scope.environment,
        )
    ]


def _scrape_interval(ask: _Asker, family: Family, matchers: Sequence[LabelMatch]) -> float | None:
    inner = f"count_over_time({selector(family.metric, matchers)}[{ask.window}])"
    answer = ask.vector(f"quantile(0.5, {inner})")
    if not answer or answer[0][1] < 2:
        return None
    return round(LOOKBACK_S / (answer[0][1] - 1), 1)


def _interval_problems(config: PrometheusConfig, report: FamilyReport) -> list[Problem]:
    interval = report.scrape_interval_s
    if interval is None or report.family.key != "cpu_usage" or config.query_mode != "range":
        return []
    window = config.cpu_rate_window_s or config.step_s
    if window >= 2 * interval:
        return []
    return [
        Problem(
            "warning",
            report.family.metric,
            f"scraped every {interval:g} s: a rate window of "
            f"{window} s covers fewer than two scrapes (CPU steps come out empty)",
            f"set prometheus.cpu_rate_window_s: {int(2 * interval + 0.999)} or more",
        )
    ]


def _family_report(
    ask: _Asker, config: PrometheusConfig, family: Family, series: int, scopes: Sequence[Scope]
) -> FamilyReport:
    counts = [
        f"label_replace(count({ask.last(family.metric, [LabelMatch(label, '!=', '')])}), "
        f'"label", {quote(label)}, "__name__", ".*")'
        for _, label in family.labels
    ]
    carried = {m.get("label", ""): v for m, v in ask.vector(" or ".join(counts))}
    seen = {label for _, label in family.labels if carried.get(label)}
    problems: list[Problem] = []
    lacking = [(field, label) for field, label in family.labels if label not in seen]
    if lacking:
        sample = ask.sample_labels(family.metric)
        seen |= sample
        problems = [_missing_label(family, f, label, sample) for f, label in lacking]
    checked: list[tuple[str, int]] = []
    interval = None
    if not problems:
        for scope in scopes:
            found, more = _check_scope(ask, config, family, scope)
            checked.append((scope.environment, found))
            problems += more
        if family.key in ("cpu_usage", "restarts"):
            interval = _scrape_interval(ask, family, _source_matchers(config, family))
    report = FamilyReport(family, series, tuple(sorted(seen)), tuple(checked), interval, ())
    problems += _interval_problems(config, report)
    return FamilyReport(
        family, series, report.labels_seen, report.scopes, interval, tuple(problems)
    )


def _absent(family: Family, stale: bool, window_days: float) -> Problem:
    severity: Severity = "error" if family.required else "warning"
    if stale:
        return Problem(
            severity,
            family.metric,
            f"series in the last {window_days:g} days but none in the last {LOOKBACK_S / 3600:g} h",
            f"{family.source} is no longer scraped: check the scrape job and its targets",
        )
    setting = f"prometheus.metrics.{family.key}"
    return Problem(
        severity,
        family.metric,
        f"no series ({family.why})",
        f"scrape {family.source}, or set {setting} to the name your stack gives it",
    )


def diagnose(
    client: Querier,
    config: PrometheusConfig,
    *,
    at_s: float,
    scopes: Sequence[Scope] = (),
    kinds: Iterable[str] = ("Deployment", "StatefulSet"),
) -> Diagnosis:
    """Check every family of ``kinds`` at ``at_s`` (see the module doc); raises
    ``MetricsError`` when Prometheus does not answer."""
    ask = _Asker(client, config, at_s, LOOKBACK_S)
    whole = _Asker(client, config, at_s, config.window_days * 86400)
    wanted = families(config, kinds)
    names = regex_alternatives(f.metric for f in wanted)
    name_match = [LabelMatch("__name__", "=~", names)]
    present = {
        m.get("__name__", ""): int(v)
        for m, v in ask.vector(f"count by (__name__) ({ask.last('', name_match)})")
    }
    stale: set[str] = set()
    if len(present) < len({f.metric for f in wanted}):
        window = duration(config.window_days * 86400)
        query = f"count by (__name__) ({ask.last('', name_match, window)})"
        stale = {m.get("__name__", "") for m, _ in ask.vector(query)} - set(present)
    reports: list[FamilyReport] = []
    for family in wanted:
        series = present.get(family.metric, 0)
        if series:
            reports.append(_family_report(ask, config, family, series, scopes))
        elif family.key in INTERMITTENT and family.metric in stale:
            series = whole.count(family.metric, [])
            reports.append(_family_report(whole, config, family, series, scopes))
        else:
            problem = _absent(family, family.metric in stale, config.window_days)
            reports.append(FamilyReport(family, 0, (), (), None, (problem,)))
    general: list[Problem] = []
    if not present and not stale:
        general.append(
            Problem(
                "error",
                "",
                "the API answers but holds no series of any metric the bot reads",
                "check prometheus.url (Mimir and Thanos need their path prefix, e.g. "
                ".../prometheus), the tenant (X-Scope-OrgID in prometheus.headers or "
                "headers_from_env) and prometheus.extra_params",
            )
        )
    return Diagnosis(config.url or "", at_s, LOOKBACK_S, tuple(reports), tuple(general))
