"""Fixtures of the metrics tests: the simulated cluster served by a real Prometheus, and the
source and query window the tests read it through."""

from bot.config.metrics import PrometheusConfig
from bot.metrics import PrometheusSource
from bot.sim import SimulatedCluster
from tests.support.prometheus import RunningPrometheus, sim_cluster, sim_prometheus

__all__ = ["cluster_window", "sim_cluster", "sim_prometheus", "source_for"]


def source_for(prom: RunningPrometheus, **overrides: object) -> PrometheusSource:
    """A source reading ``prom`` uncompressed, with settings ``overrides``."""
    return PrometheusSource(PrometheusConfig(url=prom.url, gzip=False, **overrides))


def cluster_window(cluster: SimulatedCluster) -> dict[str, float]:
    """The whole simulated span as ``start_s``/``end_s`` keyword arguments."""
    return {"start_s": float(cluster.t_s[0]), "end_s": float(cluster.t_s[-1])}
