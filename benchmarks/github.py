"""API calls of one bot run on a repository with 50 workloads and 10 changes (GitHub emulator).

Run: ``.venv/bin/python -m benchmarks.github`` (or ``python benchmarks/github.py``).

First run: 10 pull requests opened and the dashboard created. Second run, nothing changed:
the aim is no write call and at most 1 + (open bot pull requests) + 5 reads.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    # run as a script: this directory must not shadow PyGithub's ``github`` package
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from benchmarks.measure import report, timed
from bot.config.forge import PullRequestConfig
from bot.forge.results import WorkloadStatus
from tests.support.github import GitHubEmulator
from tests.support.github.scenario import create_repository, proposal_for, ref, run_once

WORKLOADS = 50
CHANGED = 10


def main() -> int:
    names = [f"app-{i:02d}" for i in range(WORKLOADS)]
    changed = names[:CHANGED]
    config = PullRequestConfig(labels=("resources",), max_open=20, max_new_per_run=20)

    def build(path: Path):
        return [proposal_for(path, [n], 250) for n in changed]

    statuses = [
        WorkloadStatus(ref(n), "changes" if n in changed else "no-change", key=f"prod/shop/{n}")
        for n in names
    ]
    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory() as tmp, GitHubEmulator(Path(tmp) / "github") as gh:
        gh.validate = "--no-validate" not in sys.argv
        create_repository(gh, names)
        for run in ("first", "second"):
            gh.reset_calls()
            with timed() as t:
                result, _ = run_once(
                    gh, Path(tmp) / "work", build, config=config, statuses=statuses
                )
            reads, writes = gh.reads(), gh.writes()
            pushes = [c for c in gh.git_calls() if "receive-pack" in c.path and c.method == "POST"]
            rows += [
                (f"{run} run: REST reads", str(len(reads))),
                (f"{run} run: REST writes", str(len(writes))),
                (f"{run} run: git pushes", str(len(pushes))),
                (f"{run} run: wall time", f"{t.seconds:.2f} s"),
            ]
            if run == "second":
                open_prs = len(gh.pulls("octo/shop", state="open"))
                budget = 1 + open_prs + 5
                rows.append(("second run: read budget 1 + open PRs + 5", str(budget)))
                ok = (
                    not writes
                    and len(reads) <= budget
                    and all(r.action == "up-to-date" for r in result.results)
                )
                rows.append(("second run within the aim", "yes" if ok else "NO"))
    report(f"GitHub API calls, {WORKLOADS} workloads, {CHANGED} changes", rows)
    return 0 if rows[-1][1] == "yes" else 1


if __name__ == "__main__":
    sys.exit(main())
