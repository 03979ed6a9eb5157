"""Which environments are deployed where, and which ones the bot proposes changes for.

``place`` reads the repository's GitOps objects (``bot.manifests.gitops``) after the
environments are read and before their workloads are built: each environment learns the
targets that deploy it: a Kustomize
environment the target's directory is or includes, a Helm environment whose chart and own values
file the target names, a plain-YAML environment with a file below the target's directory. Its
cluster, namespace and Prometheus selector (``{cluster: NAME}``; none for the unnamed cluster an
Argo CD runs in) come from the first of them (sorted), unless its opt-in entry sets them; the
namespace applies to its objects that declare none. When the repository has GitOps targets, an
environment none of them deploys is listed, never proposed for (``gitops.undeployed: true``
proposes it).

``merge`` then proposes once for workloads that read the same pods: the same kind, name and
namespace in the same cluster (in environments without GitOps targets: the same Prometheus
selector, since they query the same series; one with neither a cluster nor a selector reads
every cluster's pods of that name, so it joins the first cluster that deploys them). The
environment kept is the one a GitOps object deploys, then the one whose workload is written in
the fewest files, then the first by name; the others are listed with the environment they were
merged into. An opt-in entry's ``propose`` wins over both rules.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from bot.config.manifests import EnvironmentConfig
from bot.config.repo import RepoConfig
from bot.manifests.files import RepoFiles
from bot.manifests.gitops import Target, checkout_urls, normalize_url, read_gitops
from bot.manifests.renders import Renders
from bot.manifests.workloads import Environment
from bot.model import DeclaredWorkload, EnvironmentDeployment, SourceError, WorkloadRef


@dataclass(frozen=True, slots=True)
class Placed:
    """Every environment's deployment, and the notes of the GitOps objects read."""

    deployments: dict[str, EnvironmentDeployment]
    notes: tuple[SourceError, ...] = ()


def _under(path: str, directory: str) -> bool:
    return not directory or path == directory or path.startswith(directory + "/")


def deploys(target: Target, env: Environment, includes: Mapping[str, frozenset[str]]) -> bool:
    """Whether ``target`` deploys the environment ``env`` (see the module doc); ``includes``:
    the kustomization directories each render root includes."""
    if env.kind == "helm":
        if env.directory != target.directory:
            return False
        base = f"{env.directory}/values.yaml" if env.directory else "values.yaml"
        own = [v for v in target.values_files if v != base]
        return env.values_file in own if env.values_file else not own
    if env.kind == "kustomize":
        if env.directory == target.directory:
            return True
        return env.directory in includes.get(target.directory, frozenset())
    return any(_under(f, target.directory) for f in env.files)


def _entry(config: RepoConfig, name: str) -> EnvironmentConfig | None:
    return next((e for e in config.environments if e.name == name), None)


def place(
    root: Path,
    envs: Sequence[Environment],
    files: RepoFiles,
    renders: Renders,
    config: RepoConfig,
) -> Placed:
    """Each environment's deployment (module doc), from the GitOps objects of the checkout at
    ``root`` (unless ``gitops.read`` is false); sets ``namespace`` of the environments whose
    opt-in entry sets none to their destination namespace."""
    targets: list[Target] = []
    notes: tuple[SourceError, ...] = ()
    if config.gitops.read:
        urls = {normalize_url(u) for u in config.gitops.repository_urls} | checkout_urls(root)
        reads = {r.directory: r.files for r in renders.roots}
        found = read_gitops(files, urls, lambda d: reads.get(d, frozenset()))
        targets, notes = found.targets, tuple(found.notes)
    includes = {r.directory: r.includes for r in renders.roots}
    out: dict[str, EnvironmentDeployment] = {}
    for env in envs:
        mine = sorted(
            (t for t in targets if deploys(t, env, includes)),
            key=lambda t: (t.cluster, t.namespace or "", t.by),
        )
        entry = _entry(config, env.name)
        first = mine[0] if mine else None
        namespace = env.namespace
        if first is not None and first.namespace and not (entry and entry.namespace):
            env.namespace = namespace = first.namespace
        selector: dict[str, str] = {}
        if first is not None and first.cluster:
            selector = {"cluster": first.cluster}
        if entry is not None and "selector" in entry.model_fields_set:
            selector = dict(entry.selector)
        proposed, reason = True, ""
        if targets and not mine and not config.gitops.undeployed:
            proposed = False
            reason = (
                "no Argo CD or Flux object of this repository deploys it "
                "(gitops.undeployed: true proposes it)"
            )
        if entry is not None and entry.propose is not None:
            proposed = entry.propose
            reason = "" if proposed else "propose is false in the opt-in file"
        out[env.name] = EnvironmentDeployment(
            env.name,
            tuple(dict.fromkeys(t.by for t in mine)),
            first.cluster if first is not None else None,
            namespace,
            tuple(dict.fromkeys(t.cluster for t in mine)),
            selector,
            proposed,
            reason,
        )
    return Placed(out, notes)


def merge(
    placed: Placed, workloads: Sequence[DeclaredWorkload], config: RepoConfig
) -> tuple[tuple[EnvironmentDeployment, ...], dict[WorkloadRef, str], tuple[SourceError, ...]]:
    """The deployments with what was merged into each, every workload not proposed for with
    why (module doc), and the GitOps notes: ``Inventory``'s last three fields."""
    deployments = placed.deployments
    not_proposed: dict[WorkloadRef, str] = {}
    groups: dict[tuple[object, ...], list[DeclaredWorkload]] = {}
    for w in workloads:
        dep = deployments.get(w.ref.environment)
        if dep is None:
            continue
        if not dep.proposed:
            not_proposed[w.ref] = f"environment {dep.environment!r}: {dep.reason}"
            continue
        where: tuple[object, ...] = (
            ("cluster", dep.cluster)
            if dep.cluster is not None
            else ("selector", tuple(sorted(dep.selector.items())))
        )
        groups.setdefault((w.ref.namespace, w.ref.kind, w.ref.name, *where), []).append(w)
    clustered: dict[tuple[object, ...], list[tuple[object, ...]]] = {}
    for key in groups:
        if key[3] == "cluster":
            clustered.setdefault(key[:3], []).append(key)
    for key in [k for k in groups if k[3:] == ("selector", ()) and k[:3] in clustered]:
        # no cluster known and no selector: its queries read every cluster's pods of that
        # name, so it reads the pods of the first cluster that deploys them
        groups[min(clustered[key[:3]], key=str)].extend(groups.pop(key))
    merged: dict[str, dict[str, None]] = {}
    into: dict[str, dict[str, None]] = {}
    for group in groups.values():
        if len(group) < 2:
            continue

        def rank(w: DeclaredWorkload) -> tuple[bool, int, str]:
            dep = deployments[w.ref.environment]
            return (not dep.deployed_by, len(w.files), w.ref.environment)

        group.sort(key=rank)
        keeper = group[0]
        forced = {
            w.ref.environment
            for w in group
            if (e := _entry(config, w.ref.environment)) is not None and e.propose
        }
        place_text = _where(deployments[keeper.ref.environment], keeper.ref.namespace)
        for w in group[1:]:
            if w.ref.environment in forced:
                continue
            not_proposed[w.ref] = (
                f"reads the same pods as environment {keeper.ref.environment!r} ({place_text}), "
                "proposed for there"
            )
            merged.setdefault(keeper.ref.environment, {})[w.ref.environment] = None
            into.setdefault(w.ref.environment, {})[keeper.ref.environment] = None
    out = []
    by_environment: dict[str, list[DeclaredWorkload]] = {}
    for w in workloads:
        by_environment.setdefault(w.ref.environment, []).append(w)
    for name, dep in sorted(deployments.items()):
        own = by_environment.get(name, [])
        reason = dep.reason
        if dep.proposed and own and all(w.ref in not_proposed for w in own):
            reason = f"merged into {', '.join(into.get(name, {}))}"
        out.append(replace(dep, reason=reason, merged=tuple(merged.get(name, {}))))
    return tuple(out), not_proposed, placed.notes


def _where(dep: EnvironmentDeployment, namespace: str) -> str:
    if dep.cluster is not None:
        return f"cluster {dep.cluster or 'in-cluster'}, namespace {namespace}"
    selector = ", ".join(f"{k}={v}" for k, v in sorted(dep.selector.items()))
    return f"selector {{{selector}}}, namespace {namespace}"
