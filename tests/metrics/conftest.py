"""Fixtures of the metrics tests: the simulated cluster served by a real Prometheus."""

from tests.support.prometheus import sim_cluster, sim_prometheus

__all__ = ["sim_cluster", "sim_prometheus"]
