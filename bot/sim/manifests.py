"""Write raw YAML manifests matching a ``ClusterSpec``: one file per service, workload plus HPA.

``<dir>/<namespace>/<name>.yaml`` holds the Deployment or StatefulSet (``apps/v1``) with each
container's requests and limits, and, when the service has one, its HorizontalPodAutoscaler
(``autoscaling/v2``) with its CPU targets (``ContainerResource`` or pod-level ``Resource``).
Values are written the way people write them (``250m``, ``512Mi``); the simulator only writes
quantities, it never parses them (``bot/manifests/quantities.py`` is the one place that does).
"""

from __future__ import annotations

import json
from pathlib import Path

from bot.model import MIB
from bot.sim.errors import SimError
from bot.sim.spec import ClusterSpec, ContainerSpec, ServiceSpec


def _cpu(cores: float) -> str:
    millicores = round(cores * 1000)
    return f"{millicores // 1000}" if millicores % 1000 == 0 else f"{millicores}m"


def _memory(size_bytes: int) -> str:
    return f"{size_bytes // MIB}Mi" if size_bytes % MIB == 0 else str(size_bytes)


def _quote(value: str) -> str:
    """A YAML double-quoted scalar (JSON strings are valid YAML)."""
    return json.dumps(value)


def _container_yaml(c: ContainerSpec) -> str:
    limits = []
    if c.cpu_limit_cores is not None:
        limits.append(f"              cpu: {_cpu(c.cpu_limit_cores)}")
    if c.memory_limit_bytes is not None:
        limits.append(f"              memory: {_memory(c.memory_limit_bytes)}")
    text = (
        f"        - name: {_quote(c.name)}\n"
        f"          image: registry.example.com/{c.name}:1.0.0\n"
        f"          resources:\n"
        f"            requests:\n"
        f"              cpu: {_cpu(c.cpu_request_cores)}\n"
        f"              memory: {_memory(c.memory_request_bytes)}\n"
    )
    if limits:
        text += "            limits:\n" + "\n".join(limits) + "\n"
    return text


def service_yaml(service: ServiceSpec) -> str:
    """The manifest text of one service (workload, then its HPA if any)."""
    name, ns = _quote(service.name), _quote(service.namespace)
    replicas = service.hpa.min_replicas if service.hpa else service.replicas
    extra = f"  serviceName: {name}\n" if service.kind == "StatefulSet" else ""
    text = (
        f"apiVersion: apps/v1\n"
        f"kind: {service.kind}\n"
        f"metadata:\n"
        f"  name: {name}\n"
        f"  namespace: {ns}\n"
        f"spec:\n"
        f"{extra}"
        f"  replicas: {replicas}\n"
        f"  selector:\n"
        f"    matchLabels:\n"
        f"      app: {name}\n"
        f"  template:\n"
        f"    metadata:\n"
        f"      labels:\n"
        f"        app: {name}\n"
        f"    spec:\n"
        f"      containers:\n" + "".join(_container_yaml(c) for c in service.containers)
    )
    if service.hpa is not None and service.hpa.keda:
        text += _scaled_object_yaml(service, service.hpa.keda)
    elif service.hpa is not None:
        text += (
            f"---\n"
            f"apiVersion: autoscaling/v2\n"
            f"kind: HorizontalPodAutoscaler\n"
            f"metadata:\n"
            f"  name: {name}\n"
            f"  namespace: {ns}\n"
            f"spec:\n"
            f"  scaleTargetRef:\n"
            f"    apiVersion: apps/v1\n"
            f"    kind: {service.kind}\n"
            f"    name: {name}\n"
            f"  minReplicas: {service.hpa.min_replicas}\n"
            f"  maxReplicas: {service.hpa.max_replicas}\n"
            f"  metrics:\n"
        )
        for metric in service.hpa.targets(service.containers[0].name):
            target = (
                f"        target:\n"
                f"          type: Utilization\n"
                f"          averageUtilization: {metric.target_percent}\n"
            )
            if metric.container is None:
                text += "    - type: Resource\n      resource:\n        name: cpu\n" + target
            else:
                text += (
                    f"    - type: ContainerResource\n"
                    f"      containerResource:\n"
                    f"        name: cpu\n"
                    f"        container: {_quote(metric.container)}\n" + target
                )
    return text


def _scaled_object_yaml(service: ServiceSpec, name: str) -> str:
    """A KEDA ScaledObject for ``service``'s HPA: its bounds, one ``cpu`` trigger per metric
    (``containerName`` for a per-container one, values quoted as KEDA reads them) and a
    ``prometheus`` trigger the bot keeps as it is."""
    assert service.hpa is not None
    text = (
        f"---\n"
        f"apiVersion: keda.sh/v1alpha1\n"
        f"kind: ScaledObject\n"
        f"metadata:\n"
        f"  name: {name}\n"
        f"  namespace: {service.namespace}\n"
        f"spec:\n"
        f"  scaleTargetRef:\n"
        f"    kind: {service.kind}\n"
        f"    name: {service.name}\n"
        f"  minReplicaCount: {service.hpa.min_replicas}\n"
        f"  maxReplicaCount: {service.hpa.max_replicas}\n"
        f"  triggers:\n"
    )
    for metric in service.hpa.targets(service.containers[0].name):
        text += (
            f"    - type: cpu\n"
            f"      metricType: Utilization\n"
            f"      metadata:\n"
            f'        value: "{metric.target_percent}"\n'
        )
        if metric.container is not None:
            text += f"        containerName: {_quote(metric.container)}\n"
    return text + (
        "    - type: prometheus\n"
        "      metadata:\n"
        "        serverAddress: http://prometheus.monitoring:9090\n"
        f'        query: sum(rate(http_requests_total{{app="{service.name}"}}[2m]))\n'
        '        threshold: "100"\n'
    )


def write_manifests(spec: ClusterSpec, directory: Path) -> list[Path]:
    """Write one YAML file per service under ``directory``; return the paths written."""
    paths: list[Path] = []
    for service in spec.services:
        if "/" in service.namespace or "/" in service.name or service.name.startswith("."):
            raise SimError(f"cannot use {service.namespace}/{service.name} as a file name")
        path = directory / service.namespace / f"{service.name}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(service_yaml(service), encoding="utf-8")
        paths.append(path)
    return paths
