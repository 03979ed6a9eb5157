"""State between runs, end to end: ``tortoise-bot run`` reads its own merged pull requests.

Same setup as ``test_run.py`` (simulated demo shop in a real Prometheus, manifests in the GitHub
emulator, ``tortoise-bot run`` as a process). The frontend is put in emergency in the
repository config; the checkout's HPA target is raised. After both pull requests are merged
(the checkout's 2 h before the run's ``--now``) and the emergency flag removed, the next run
steps the frontend's minReplicas back by the reduction factor and leaves the checkout's target
alone: the only memory of either is the state in the merged pull requests.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta

import pytest
from ruamel.yaml import YAML

from bot.model import FieldId, WorkloadRef
from bot.report import parse_state
from bot.report.proposal import change_id
from tests.e2e.test_run import DEMO_REPO, TOKEN, _bot_config, _files, demo_prometheus

__all__ = ["demo_prometheus"]

FRONTEND = WorkloadRef("Deployment", "shop", "frontend")
CHECKOUT = WorkloadRef("Deployment", "shop", "checkout", "prod")
MIN_REPLICAS = change_id(FRONTEND, None, FieldId.HPA_MIN_REPLICAS)
CHECKOUT_TARGET = change_id(CHECKOUT, None, FieldId.HPA_TARGET_CPU)
EMERGENCY_RULE = b"  - match: Deployment/shop/frontend\n    emergency: true\n"


def _pull(gh, name: str):
    pulls = [
        p
        for p in gh.pulls("octo/shop", state="open")
        if p.pull is not None and p.pull.head.endswith(f"/{name}")
    ]
    assert len(pulls) <= 1
    return pulls[0] if pulls else None


def _frontend_hpa(gh) -> dict:
    text = gh.repository("octo/shop").git.read_file("main", "apps/raw/frontend.yaml")
    docs = list(YAML(typ="safe").load_all(text))
    return next(d for d in docs if d["kind"] == "HorizontalPodAutoscaler")["spec"]


@pytest.mark.slow
def test_emergency_steps_back_and_a_raised_target_waits_across_runs(
    cli, tmp_path, demo_prometheus, github_emulator
):
    gh = github_emulator
    files = _files(DEMO_REPO)
    files[".tortoise-bot.yaml"] = files[".tortoise-bot.yaml"].replace(
        b"workloads:\n", b"workloads:\n" + EMERGENCY_RULE, 1
    )
    gh.create_repository("octo", "shop", files)
    gh.add_token(TOKEN, "tortoise-bot")
    # Tortoise's own target steps (+5 points, one change a day) are what waits across runs.
    upstream_targets: dict[str, object] = {"replicas": {"target": "upstream"}}
    config = _bot_config(
        tmp_path / "bot.yaml", demo_prometheus.url, gh.api_url, recommend=upstream_targets
    )
    now = demo_prometheus.extra["now"]
    env = {"GITHUB_TOKEN": TOKEN}

    first = cli("run", "--config", str(config), "--now", now, env=env)
    assert first.returncode == 0, first.stdout + first.stderr
    frontend, checkout = _pull(gh, "frontend"), _pull(gh, "checkout")
    assert frontend is not None and checkout is not None
    frontend_state, checkout_state = parse_state(frontend.body), parse_state(checkout.body)
    assert frontend_state is not None and checkout_state is not None
    assert frontend_state.phases[FRONTEND.key] == "emergency"
    assert checkout_state.phases[CHECKOUT.key] == "normal"
    raised = checkout_state.changes[CHECKOUT_TARGET]
    assert raised is not None and raised > 70  # the demo's checkout starts at 70 %

    gh.merge("octo/shop", frontend.number)
    gh.merge("octo/shop", checkout.number, at=datetime.fromisoformat(now) - timedelta(hours=2))
    spec = _frontend_hpa(gh)
    assert spec["minReplicas"] == spec["maxReplicas"] == frontend_state.changes[MIN_REPLICAS]
    repo_config = gh.repository("octo/shop").git.read_file("main", ".tortoise-bot.yaml")
    assert repo_config is not None and EMERGENCY_RULE in repo_config
    gh.push("octo/shop", "main", {".tortoise-bot.yaml": repo_config.replace(EMERGENCY_RULE, b"")})

    second = cli("run", "--config", str(config), "--now", now, env=env)
    assert second.returncode == 0, second.stdout + second.stderr
    frontend = _pull(gh, "frontend")
    assert frontend is not None
    state = parse_state(frontend.body)
    assert state is not None
    assert state.changes[MIN_REPLICAS] == math.trunc(spec["minReplicas"] * 0.95)
    assert state.phases[FRONTEND.key] == "back-to-normal"
    checkout = _pull(gh, "checkout")
    checkout_state = parse_state(checkout.body) if checkout is not None else None
    assert checkout_state is None or CHECKOUT_TARGET not in checkout_state.changes

    # what `plan` (no GitHub, nothing known) would say on the same tree: straight back
    local = tmp_path / "local"
    for path, data in _files_at_main(gh).items():
        (local / path).parent.mkdir(parents=True, exist_ok=True)
        (local / path).write_bytes(data)
    planned = cli(
        "plan", "--repo", str(local), "--config", str(config), "--now", now, "--format", "json"
    )
    plan = json.loads(planned.stdout)
    blind = next(w for w in plan["workloads"] if w["name"] == "frontend")
    assert blind["hpa"]["min_replicas"]["proposed"] < math.trunc(spec["minReplicas"] * 0.95)
    blind_checkout = next(w for w in plan["workloads"] if w["name"] == "checkout")
    assert blind_checkout["hpa"]["targets"][0]["current"] == raised
    assert blind_checkout["hpa"]["targets"][0]["proposed"] > raised  # held only by the memory
    gh.assert_valid()


def _files_at_main(gh) -> dict[str, bytes]:
    bare = gh.repository("octo/shop").git
    out = {}
    for path in _files(DEMO_REPO):
        data = bare.read_file("main", path)
        if data is not None:
            out[path] = data
    return out
