"""A repository's findings (what it declares that the bot cannot read or edit) are listed once
on its dashboard, and the run still serves it: the repository is ok, its pull requests open."""

from __future__ import annotations

from bot.forge.github import GitHubForge
from bot.forge.github.auth import TokenCredentials
from bot.pipeline.serve import serve_repository
from bot.report.render import render_dashboard
from tests.forge.demo_runs import REPO, demo_files, demo_settings, demo_source
from tests.support.github.scenario import settings as fast_settings

__all__ = ["demo_settings", "demo_source"]

OUTSIDE = b"""\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: vault
  namespace: shop
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: StatefulSet, name: vault}
  minReplicas: 3
  maxReplicas: 5
"""


def test_the_findings_section_lists_each_finding_once_and_only_when_there_are_some():
    body = render_dashboard([], title="t", findings=["a.yaml:3: bad", "b.yaml:1: worse"])
    section = body.split("## Findings in the repository", 1)[1].replace("\\", "")  # escaped
    assert "- a.yaml:3: bad\n" in section and "- b.yaml:1: worse\n" in section
    assert "Findings in the repository" not in render_dashboard([], title="t")


def test_a_run_lists_the_repositorys_findings_on_its_dashboard(
    github_emulator, tmp_path, demo_source, demo_settings
):
    gh = github_emulator
    files = demo_files(b"", "workload")
    files["apps/raw/vault-hpa.yaml"] = OUTSIDE  # a StatefulSet an external chart installs
    gh.create_repository("octo", "shop", files)
    forge = GitHubForge(fast_settings(gh), TokenCredentials(gh.token), workdir=tmp_path)
    report = serve_repository(REPO, forge, demo_source, demo_settings, now_s=demo_source.end_s)
    assert report.ok, report.message
    assert report.opened  # the rest of the repository is served
    assert "1 finding(s) in the repository" in report.message
    (dashboard,) = gh.issues(REPO)
    section = (dashboard.body or "").split("## Findings in the repository", 1)[1]
    section = section.replace("\\", "")  # Markdown escaping
    findings = [line for line in section.splitlines() if line.startswith("- ")]
    assert len(findings) == 1, section
    assert findings[0].startswith("- apps/raw/vault-hpa.yaml:") and "StatefulSet" in findings[0]
