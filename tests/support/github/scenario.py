"""A small repository of workloads and the proposals a pipeline would compute for it.

Shared by the forge's end-to-end tests and ``benchmarks/github.py``: ``apps/<name>.yaml``
holds one ``cpu:`` line per workload; ``proposal_for`` reads the checked-out base and
builds the ``Proposal`` that sets a new value, as the pipeline does.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bot.config.forge import GitHubConfig, PullRequestConfig
from bot.forge.branches import group_key
from bot.forge.github import GitHubForge, RepositorySession
from bot.forge.github.auth import Credentials, TokenCredentials
from bot.forge.lifecycle import ThresholdCheck, same_proposal
from bot.forge.publish import publish, update_dashboard
from bot.forge.results import PublishReport, WorkloadStatus
from bot.model import ChangeSet, FieldChange, FieldId, FileChange, Recommendation, WorkloadRef
from bot.report import Proposal
from tests.support.github.server import GitHubEmulator

REPO = "octo/shop"
ENVIRONMENT = "prod"
NAMESPACE = "shop"


def workload_file(name: str) -> str:
    return f"apps/{name}.yaml"


def manifest(name: str, cpu: str) -> bytes:
    return f"kind: Deployment\nname: {name}\ncpu: {cpu}\n".encode()


def create_repository(gh: GitHubEmulator, names: list[str], cpu: str = "500m") -> None:
    owner, name = REPO.split("/")
    gh.create_repository(owner, name, {workload_file(n): manifest(n, cpu) for n in names})


def ref(name: str) -> WorkloadRef:
    return WorkloadRef("Deployment", NAMESPACE, name, ENVIRONMENT)


def settings(gh: GitHubEmulator, **overrides: object) -> GitHubConfig:
    """Fast settings for tests: no throttling, tiny backoff, short rate-limit waits."""
    values: dict[str, object] = {
        "api_url": gh.api_url,
        "retries": 2,
        "backoff_factor": 0.001,
        "seconds_between_requests": None,
        "seconds_between_writes": None,
        "max_rate_limit_wait_s": 0.5,
        "secondary_rate_wait_s": 0.01,
        "git_timeout_s": 60,
        **overrides,
    }
    return GitHubConfig.model_validate(values)


def proposal_for(
    checkout: Path, names: list[str], cpu_millicores: int, *, key: str | None = None
) -> Proposal:
    """A proposal setting ``cpu`` of each workload in ``names`` (one change set ``key``)."""
    files, changes, recs = [], [], []
    for name in names:
        path = workload_file(name)
        old = (checkout / path).read_bytes()
        current = next(line for line in old.decode().splitlines() if line.startswith("cpu:"))
        new = old.replace(current.encode(), f"cpu: {cpu_millicores}m".encode())
        files.append(FileChange(path, old, new))
        current_cores = int(current.split()[1].rstrip("m")) / 1000
        changes.append(
            FieldChange(
                ref(name),
                FieldId.REQUESTS_CPU,
                cpu_millicores / 1000,
                current_cores,
                "app",
                "P90 x 1.15",
            )
        )
        recs.append(Recommendation(ref(name), "changes"))
    change_key = key or group_key(ref(names[0]), "workload")
    return Proposal(
        key=change_key,
        title=f"Right-size {', '.join(names)}",
        change_set=ChangeSet(change_key, tuple(changes), tuple(recs)),
        files=tuple(files),
    )


def run_once(
    gh: GitHubEmulator,
    workdir: Path,
    build: Callable[[Path], list[Proposal]],
    *,
    config: PullRequestConfig | None = None,
    credentials: Credentials | None = None,
    statuses: list[WorkloadStatus] | None = None,
    within: ThresholdCheck = same_proposal,
    dashboard: bool = True,
    github: GitHubConfig | None = None,
    in_error: frozenset[str] = frozenset(),
) -> tuple[PublishReport, RepositorySession]:
    """One bot run on ``REPO`` as the pipeline makes it: checkout, what merged pull requests
    remember (``workload_memory``, before planning), proposals from ``build(checkout)``,
    publish, dashboard."""
    forge = GitHubForge(
        github or settings(gh), credentials or TokenCredentials(gh.token), workdir=workdir
    )
    session = forge.open(REPO, config or PullRequestConfig(), dashboard=dashboard)
    path = session.checkout()
    session.workload_memory()
    proposals = build(path)
    report = publish(session, proposals, within_thresholds=within, in_error=in_error)
    if statuses is None:
        statuses = [
            WorkloadStatus(ref(n), "changes", key=p.key) for p in proposals for n in _names(p)
        ]
    update_dashboard(session, statuses, report)
    return report, session


def _names(proposal: Proposal) -> list[str]:
    return [r.name for r in proposal.workloads]
