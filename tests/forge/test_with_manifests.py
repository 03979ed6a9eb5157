"""The seam with the manifest editor: discover, edit per change set, propose, publish."""

from __future__ import annotations

import pytest

from bot.config.repo import RepoConfig
from bot.forge.branches import group_change_sets, group_key
from bot.forge.github import GitHubForge
from bot.forge.github.auth import TokenCredentials
from bot.forge.publish import publish, update_dashboard
from bot.forge.results import WorkloadStatus
from bot.manifests import apply_changes, discover
from bot.model import ChangeSet, FieldChange, FieldId
from bot.report import make_proposal, parse_state
from tests.support.github.scenario import settings

pytestmark = pytest.mark.github

DEPLOYMENT = b"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  replicas: 2
  template:
    spec:
      containers:
        - name: app
          image: web:1
          resources:
            requests:
              cpu: 500m   # set by hand in 2023
              memory: 256Mi
"""

OTHER = DEPLOYMENT.replace(b"name: web", b"name: api")


def test_real_manifests_become_pull_requests(github_emulator, tmp_path):
    gh = github_emulator
    gh.create_repository("octo", "deploys", {"web.yaml": DEPLOYMENT, "api.yaml": OTHER})
    config = RepoConfig()
    forge = GitHubForge(settings(gh), TokenCredentials(gh.token), workdir=tmp_path)
    session = forge.open("octo/deploys", config.pull_requests)
    checkout = session.checkout()
    discovery = discover(checkout, config)
    inventory = discovery.inventory
    by_name = {w.ref.name: w.ref for w in inventory.workloads}
    assert set(by_name) == {"web", "api"}
    change_sets = [
        ChangeSet(
            ref.key, (FieldChange(ref, FieldId.REQUESTS_CPU, 0.25, 0.5, "app", "P90 x 1.15"),)
        )
        for ref in by_name.values()
    ]
    proposals = [
        make_proposal(cs, apply_changes(checkout, discovery, cs.changes, config, write=False))
        for cs in group_change_sets(change_sets, config.pull_requests.grouping)
    ]
    assert all(len(p.files) == 1 for p in proposals)
    report = publish(session, proposals)
    statuses = [
        WorkloadStatus(ref, "changes", key=group_key(ref, "workload")) for ref in by_name.values()
    ]
    update_dashboard(session, statuses, report)
    assert sorted(report.opened) == ["default/shop/api", "default/shop/web"]
    git = gh.repository("octo/deploys").git
    edited = git.read_file("refs/heads/tortoise-bot/default/shop/web", "web.yaml")
    assert edited == DEPLOYMENT.replace(b"cpu: 500m   #", b"cpu: 250m   #")
    assert git.read_file("refs/heads/tortoise-bot/default/shop/web", "api.yaml") == OTHER
    assert all(parse_state(p.body) is not None for p in gh.pulls("octo/deploys"))
