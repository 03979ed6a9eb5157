"""Environments that read the same pods are proposed for once; the opt-in file overrides; the
commands say so (``validate``, ``plan``) and read no history for what is not proposed."""

from __future__ import annotations

import json

import jsonschema  # type: ignore[import-untyped]

from bot.config.bot import BotSettings
from bot.config.repo import RepoConfig
from bot.manifests import discover
from bot.pipeline.plan import history_requests
from bot.settings import RepositorySettings
from tests.manifests.conftest import workload
from tests.manifests.gitops_repos import (
    URL,
    application,
    argo_bank,
    deployment_of,
    gitops_config,
    overlay,
    two_overlays,
)
from tests.manifests.test_commands import SCHEMA


def test_two_overlays_in_one_namespace_are_proposed_for_once(repo):
    inventory = discover(two_overlays(repo), RepoConfig()).inventory
    kept = workload(inventory, "ledger", "overlays/production")
    merged = workload(inventory, "ledger", "overlays/production-fwi")
    assert kept.ref not in inventory.not_proposed
    assert inventory.not_proposed[merged.ref] == (
        "reads the same pods as environment 'overlays/production' "
        "(selector {}, namespace bank), proposed for there"
    )
    assert deployment_of(inventory, "overlays/production").merged == ("overlays/production-fwi",)
    assert deployment_of(inventory, "overlays/production-fwi").reason == (
        "merged into overlays/production"
    )
    assert workload(inventory, "ledger", "overlays/staging").ref not in inventory.not_proposed


def test_the_environment_a_gitops_object_deploys_is_kept(repo):
    root = two_overlays(
        repo,
        {
            "argocd/fwi.yaml": application("fwi", "overlays/production-fwi", "prod", "bank"),
            "argocd/prod.yaml": application("prod", "overlays/production", "prod", "bank"),
            "argocd/staging.yaml": application("stg", "overlays/staging", "prod", "bank-staging"),
        },
    )
    inventory = discover(root, gitops_config()).inventory
    assert workload(inventory, "ledger", "overlays/production").ref not in inventory.not_proposed
    assert workload(inventory, "ledger", "overlays/production-fwi").ref in inventory.not_proposed
    # only production-fwi deployed: it is the one kept
    root.joinpath("argocd/prod.yaml").unlink()
    inventory = discover(root, gitops_config(undeployed=True)).inventory
    assert (
        workload(inventory, "ledger", "overlays/production-fwi").ref not in inventory.not_proposed
    )
    assert (
        "same pods as environment 'overlays/production-fwi'"
        in inventory.not_proposed[workload(inventory, "ledger", "overlays/production").ref]
    )


def test_the_opt_in_file_overrides_the_merge_and_the_selector(repo):
    root = two_overlays(repo)
    config = RepoConfig.model_validate(
        {
            "environments": [
                {"name": "overlays/production"},
                {"name": "overlays/production-fwi", "selector": {"cluster": "fwi"}},
                {"name": "overlays/staging", "propose": False},
            ]
        }
    )
    inventory = discover(root, config).inventory
    assert not inventory.not_proposed.keys() & {
        workload(inventory, "ledger", e).ref
        for e in ("overlays/production", "overlays/production-fwi")
    }
    assert dict(deployment_of(inventory, "overlays/production-fwi").selector) == {"cluster": "fwi"}
    assert (
        "propose is false"
        in inventory.not_proposed[workload(inventory, "ledger", "overlays/staging").ref]
    )


# ------------------------------------------------------------------------ the commands


def test_validate_says_where_each_environment_is_deployed_and_what_was_merged(cli, repo):
    root = argo_bank(
        repo,
        {
            "overlays/production-fwi/kustomization.yaml": overlay("bank", "350m"),
            "argocd/apps/fwi.yaml": application(
                "bank-fwi", "overlays/production-fwi", "prod-eu", "bank"
            ),
            ".tortoise-bot.yaml": f"gitops:\n  repository_urls: [{URL}]\n",
        },
    )
    done = cli("validate", str(root))
    assert done.returncode == 0, done.stdout + done.stderr  # notes are not problems
    lines = done.stdout.splitlines()
    assert (
        "  overlays/production: deployed to cluster prod-eu, namespace bank by Application "
        "bank-production (argocd/apps/production.yaml:2); also proposes for "
        "overlays/production-fwi (same pods)"
    ) in lines
    assert (
        "  overlays/production-fwi: deployed to cluster prod-eu, namespace bank by Application "
        "bank-fwi (argocd/apps/fwi.yaml:2); not proposed for: merged into overlays/production"
    ) in lines
    assert any(
        line.startswith("  overlays/dev: not proposed for: no Argo CD or Flux object")
        for line in lines
    )
    assert any(
        line.startswith("note: argocd/apps/other.yaml:2: Application payments") for line in lines
    )


def test_plan_skips_the_merged_copies_and_reads_no_history_for_them(cli, repo, tmp_path):
    root = two_overlays(repo)
    history = tmp_path / "history.zip"
    assert (
        cli("simulate", "--repo", str(root), "--out", str(history), "--seed", "1").returncode == 0
    )
    done = cli("plan", "--repo", str(root), "--snapshot", str(history), "--format", "json")
    data = json.loads(done.stdout)
    outcomes = {(o["name"], o["environment"]): o for o in data["workloads"]}
    merged = outcomes[("ledger", "overlays/production-fwi")]
    assert merged["status"] == "skipped"
    assert merged["reasons"] == [
        "not proposed for: reads the same pods as environment 'overlays/production' "
        "(selector {}, namespace bank), proposed for there"
    ]
    assert outcomes[("ledger", "overlays/production")]["status"] != "skipped"


def test_history_is_asked_only_for_what_is_proposed_with_the_cluster_selector(repo):
    config = gitops_config()
    inventory = discover(argo_bank(repo), config).inventory
    requests = {
        (r.ref.name, r.ref.environment): dict(r.selector)
        for r in history_requests(inventory, RepositorySettings(config, BotSettings()))
    }
    assert requests == {
        ("ledger", "overlays/production"): {"cluster": "prod-eu"},
        ("teller", "overlays/production"): {"cluster": "prod-eu"},
        ("ledger", "overlays/staging"): {"cluster": "staging"},
        ("teller", "overlays/staging"): {"cluster": "staging"},
    }


def test_gitops_read_false_keeps_every_overlay_proposed(repo):
    inventory = discover(argo_bank(repo), gitops_config(read=False)).inventory
    assert not inventory.notes
    assert all(d.proposed and not d.deployed_by for d in inventory.deployments)
    assert workload(inventory, "ledger", "overlays/dev").ref not in inventory.not_proposed
    assert workload(inventory, "ledger", "overlays/production").ref.namespace == "bank"


def test_validate_json_carries_the_deployments_and_matches_the_schema(cli, repo):
    root = two_overlays(repo)
    done = cli("validate", str(root), "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    jsonschema.validate(data, SCHEMA)
    fwi = next(d for d in data["deployments"] if d["environment"] == "overlays/production-fwi")
    assert fwi["reason"] == "merged into overlays/production"
    assert {(n["name"], n["environment"]) for n in data["not_proposed"]} == {
        ("ledger", "overlays/production-fwi"),
        ("teller", "overlays/production-fwi"),
    }
