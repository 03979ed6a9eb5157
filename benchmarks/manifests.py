"""Manifest engine benchmark: discover + edit a generated GitOps repository.

Run: ``.venv/bin/python -m benchmarks.manifests`` (``--workloads 2000 --files 500 --apps 10
--profile``).

The repository: ``--apps`` Kustomize bases holding ``--files`` raw YAML files in total, with
``workloads / 2`` Deployments of two containers (comments, an HPA for every other one), and two
overlays per app (``prod`` with its own patch, ``staging``): ``2 * apps`` overlays, each rendered
once by ``kubectl kustomize``, so the inventory holds ``--workloads`` workloads. The edit changes
requests.cpu and limits.memory of every workload in ``prod``: values the prod patch sets are
edited in place, the others go into a new overlay patch (the bases are shared with staging), and
every changed overlay is rendered again for verification. Floors: the same files parsed by
ruamel.yaml's round-trip loader (what a plain ruamel-based tool pays) and composed by its C parser
(what discovery itself pays). CPU seconds are reported apart for Python and ``kubectl`` (the
machine may be shared: the load average is printed with the figures); ``--profile`` prints the
Python functions that take the most time.

Render cache (``bot.manifests.rendercache``): discovery runs ``--runs`` times as a pair, first
with an empty cache, then on a fresh copy of the repository (as the next scheduled run's clone)
with the cache the first one filled; each pair starts as a new process would (kubectl's version
asked again). Both discovery CPU figures (Python + kubectl) are printed as min / median / max,
with their ratio, the cache's hits and ``/proc/loadavg`` before and after.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import resource
import shutil
import statistics
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ruamel.yaml import YAML

from benchmarks.measure import peak_rss_mib, report, timed
from bot.config.repo import RepoConfig
from bot.manifests import apply_changes, discover
from bot.manifests.environments import RENDER_WORKERS
from bot.manifests.rendercache import _IDENTITIES, CACHE_DIR_ENV, render_cache
from bot.manifests.rendering import render
from bot.manifests.yamldoc import parse_text
from bot.model import FieldChange, FieldId

DEPLOYMENT = """\
# {name}: generated for the benchmark
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  labels: {{app: {name}, tier: backend}}
spec:
  replicas: 2
  selector:
    matchLabels:
      app: {name}
  template:
    metadata:
      labels:
        app: {name}
    spec:
      containers:
        - name: app
          image: "registry.example.com/{name}:1.2.3"
          ports:
            - containerPort: 8080
          env:
            - name: LOG_LEVEL
              value: info
          resources:
            requests:
              cpu: 100m   # measured
              memory: 128Mi
            limits:
              memory: 256Mi
        - name: proxy
          image: envoy:1.30
          resources:
            requests: {{cpu: 50m, memory: 64Mi}}
"""
HPA = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {name}
spec:
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: {name}}}
  minReplicas: 2
  maxReplicas: 10
  metrics:
    - type: Resource
      resource: {{name: cpu, target: {{type: Utilization, averageUtilization: 70}}}}
"""
PATCH = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  template:
    spec:
      containers:
        - name: app
          resources:
            requests:
              cpu: 200m # prod
"""


OVERLAYS_PER_APP = 2
"""``prod`` and ``staging``: each Deployment is one inventory workload in each."""


def generate(root: Path, *, deployments: int, files: int, apps: int) -> list[Path]:
    """Write the repository; return every YAML file written."""
    per_file = max(1, deployments // files)
    written: list[Path] = []
    number = 0
    for app in range(apps):
        base = root / "apps" / f"app{app}"
        base.mkdir(parents=True)
        names = []
        resources = []
        for index in range(files // apps):
            docs = []
            for _ in range(per_file):
                name = f"svc{number}"
                number += 1
                names.append(name)
                docs.append(DEPLOYMENT.format(name=name))
                if number % 2 == 0:
                    docs.append(HPA.format(name=name))
            path = base / f"file{index}.yaml"
            path.write_text("---\n".join(docs))
            written.append(path)
            resources.append(f"- {path.name}")
        (base / "kustomization.yaml").write_text("resources:\n" + "\n".join(resources) + "\n")
        for env in ("prod", "staging"):
            overlay = root / "overlays" / env / f"app{app}"
            overlay.mkdir(parents=True)
            kustomization = f"namespace: {env}\nresources:\n- ../../../apps/app{app}\n"
            if env == "prod":
                patch = overlay / "patch.yaml"
                patch.write_text("---\n".join(PATCH.format(name=n) for n in names[::4]))
                written.append(patch)
                kustomization += "patches:\n- path: patch.yaml\n"
            (overlay / "kustomization.yaml").write_text(kustomization)
    return written


def _cpu() -> tuple[float, float]:
    """CPU seconds used so far by this process and by its finished children (kubectl)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def _loadavg() -> str:
    with open("/proc/loadavg", encoding="ascii") as f:
        return f.read().strip()


def _spread(values: list[float]) -> str:
    return f"{min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f}"


def cache_pairs(root: Path, config: RepoConfig, runs: int, scratch: Path) -> list[tuple[str, str]]:
    """Discovery with an empty render cache, then on a copy of the repository with the cache
    filled, ``runs`` times (a fresh cache directory each); the report rows."""
    cold: list[float] = []
    warm: list[float] = []
    hits = []
    load_before = _loadavg()
    for run in range(runs):
        os.environ[CACHE_DIR_ENV] = str(scratch / f"cache{run}")
        figures = []
        for checkout in (root, scratch / f"clone{run}"):
            if checkout != root:
                shutil.copytree(root, checkout)
            _IDENTITIES.clear()  # a new process asks kubectl its version again
            cache = render_cache()
            assert cache is not None
            before_hits = cache.stats.hits
            cpu0 = _cpu()
            inventory = discover(checkout, config).inventory
            cpu1 = _cpu()
            figures.append((sum(cpu1) - sum(cpu0), inventory, cache.stats.hits - before_hits))
        (first, inv_first, _), (second, inv_second, hit) = figures
        assert inv_first == inv_second, "the cached renders changed the inventory"
        cold.append(first)
        warm.append(second)
        hits.append(hit)
    ratios = [w / c for c, w in zip(cold, warm, strict=True)]
    return [
        (f"render cache, {runs} runs: CPU discover (python + kubectl) min / median / max", ""),
        ("  first run (empty cache)", f"{_spread(cold)} s"),
        ("  second run (unchanged repository, new clone)", f"{_spread(warm)} s"),
        ("  second / first", f"{_spread(ratios)} (hits per second run: {hits})"),
        ("  /proc/loadavg before", load_before),
        ("  /proc/loadavg after", _loadavg()),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--workloads", type=int, default=2000, help="workloads in the inventory (all overlays)"
    )
    parser.add_argument("--files", type=int, default=500, help="raw YAML files in the bases")
    parser.add_argument("--apps", type=int, default=10, help="bases, each with 2 overlays")
    parser.add_argument("--profile", action="store_true", help="print where the time goes")
    parser.add_argument(
        "--runs", type=int, default=3, help="first/second discovery pairs for the render cache"
    )
    args = parser.parse_args()
    deployments = max(1, args.workloads // OVERLAYS_PER_APP)
    profiler = cProfile.Profile() if args.profile else None
    with tempfile.TemporaryDirectory(prefix="tortoise-bot-bench-") as tmp:
        root = Path(tmp) / "repo"
        files = generate(root, deployments=deployments, files=args.files, apps=args.apps)
        texts = [p.read_text() for p in files]
        with timed() as floor_rt:
            for text in texts:
                list(YAML(typ="rt").load_all(text))
        with timed() as floor_c:
            for text in texts:
                parse_text("f", text)
        overlays = sorted(
            p.parent.relative_to(root).as_posix()
            for p in (root / "overlays").rglob("kustomization.yaml")
        )
        with timed() as t_kubectl, ThreadPoolExecutor(max_workers=RENDER_WORKERS) as pool:
            list(pool.map(lambda d: render(root, d, d), overlays))
        config = RepoConfig()
        os.environ[CACHE_DIR_ENV] = str(Path(tmp) / "cache-edit")
        load_before = os.getloadavg()[0]
        if profiler:
            profiler.enable()
        cpu0 = _cpu()
        with timed() as t_discover:
            discovery = discover(root, config)
            inventory = discovery.inventory
        cpu1 = _cpu()
        prod = [w for w in inventory.workloads if w.ref.environment.startswith("overlays/prod/")]
        changes = [
            change
            for w in prod
            for change in (
                FieldChange(w.ref, FieldId.REQUESTS_CPU, 0.3, container="app"),
                FieldChange(w.ref, FieldId.LIMITS_MEMORY, 300 * 2**20, container="app"),
            )
        ]
        with timed() as t_edit:
            result = apply_changes(root, discovery, changes, config, write=True)
        cpu2 = _cpu()
        if profiler:
            profiler.disable()
        load_after = os.getloadavg()[0]
        assert not result.failed, result.errors[:3]
        peak = peak_rss_mib()
        cache_rows = cache_pairs(root, config, args.runs, Path(tmp))
        total = t_discover.seconds + t_edit.seconds
        report(
            "manifest engine",
            [
                ("files (YAML)", str(len(files) + 3 * args.apps)),
                ("Deployments", f"{deployments} (x{OVERLAYS_PER_APP} overlays each)"),
                ("inventory workloads", str(len(inventory.workloads))),
                ("overlays rendered (kubectl)", str(len(inventory.environments))),
                ("changes applied", f"{len(changes)} -> {len(result.files)} files"),
                ("discover", f"{t_discover.seconds:.2f} s"),
                ("edit + verify + write", f"{t_edit.seconds:.2f} s"),
                ("total", f"{total:.2f} s"),
                (
                    f"  of which kubectl kustomize alone ({RENDER_WORKERS} at a time)",
                    f"{t_kubectl.seconds:.2f} s per pass over all overlays",
                ),
                (
                    "CPU discover: python / kubectl",
                    f"{cpu1[0] - cpu0[0]:.2f} s / {cpu1[1] - cpu0[1]:.2f} s",
                ),
                (
                    "CPU edit: python / kubectl",
                    f"{cpu2[0] - cpu1[0]:.2f} s / {cpu2[1] - cpu1[1]:.2f} s",
                ),
                ("floor: ruamel round-trip load", f"{floor_rt.seconds:.2f} s"),
                ("floor: ruamel C compose", f"{floor_c.seconds:.2f} s"),
                ("ratio total / round-trip floor", f"{total / floor_rt.seconds:.2f}"),
                ("peak RSS (discover + edit)", f"{peak:.0f} MiB"),
                ("load average (1 min) before / after", f"{load_before:.2f} / {load_after:.2f}"),
                *cache_rows,
            ],
        )
    if profiler:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(20)
        print(out.getvalue())


if __name__ == "__main__":
    main()
