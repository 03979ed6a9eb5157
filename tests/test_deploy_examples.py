"""The Kubernetes examples (``config/deploy/``) as ``kubectl apply -k`` would send them, rendered
with the real ``kubectl kustomize``: each runs under the restricted Pod Security Standard, reads
the generated settings and credentials, names one image whose build is documented; the sharded
one is an Indexed CronJob with one pod per shard. And the composite action caches its install."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from bot import __version__
from bot.config.bot import load_bot_settings
from tests.conftest import PROJECT, require_binary

DEPLOY = PROJECT / "config" / "deploy"
EXAMPLES = ("cronjob", "serve", "sharded")
IMAGE = "ghcr.io/tortoise-bot/tortoise-bot"
RESTRICTED_VOLUMES = {
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
}
"""The volume types the restricted Pod Security Standard allows."""


def _render(example: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        [require_binary("kubectl"), "kustomize", str(DEPLOY / example)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return [d for d in YAML(typ="safe").load_all(done.stdout) if d]


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[dict[str, Any]]]:
    return {example: _render(example) for example in EXAMPLES}


def _pod(document: dict[str, Any]) -> dict[str, Any]:
    spec = document["spec"]
    pod: dict[str, Any] = spec.get("jobTemplate", {}).get("spec", spec)["template"]["spec"]
    return pod


def _workloads(documents: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    return (d for d in documents if d["kind"] in ("Deployment", "CronJob", "Job"))


def _named(documents: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [d for d in documents if d["kind"] == kind]
    return found


def test_every_example_directory_is_rendered():
    runnable = {
        p.parent.name
        for p in DEPLOY.glob("*/kustomization.yaml")
        if "kind: Kustomization" in p.read_text() and p.parent.name != "base"
    }
    assert runnable == set(EXAMPLES)


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_container_runs_under_the_restricted_pod_security_standard(rendered, example):
    workloads = list(_workloads(rendered[example]))
    assert len(workloads) == 1
    pod = _pod(workloads[0])
    context = pod["securityContext"]
    assert context["runAsNonRoot"] is True and context["runAsUser"] != 0
    assert context["seccompProfile"] == {"type": "RuntimeDefault"}
    assert not pod.get("hostNetwork") and not pod.get("hostPID") and not pod.get("hostIPC")
    volumes = {v["name"]: v for v in pod["volumes"]}
    for volume in volumes.values():
        assert set(volume) - {"name"} <= RESTRICTED_VOLUMES, volume
    containers = pod["containers"] + pod.get("initContainers", [])
    assert containers
    for container in containers:
        own = container["securityContext"]
        assert own["allowPrivilegeEscalation"] is False
        assert own["capabilities"] == {"drop": ["ALL"]}
        assert own["readOnlyRootFilesystem"] is True
        assert not own.get("privileged") and own.get("runAsUser", 1) != 0
        assert own.get("seccompProfile", context["seccompProfile"]) == {"type": "RuntimeDefault"}
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        assert "emptyDir" in volumes[mounts["/tmp"]], "a writable /tmp"
        env = {e["name"]: e for e in container["env"]}
        assert env["HOME"]["value"] == "/tmp", "git and the render cache write under HOME"


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_example_reads_the_generated_settings_and_credentials(rendered, example, tmp_path):
    documents = rendered[example]
    config_map, secret = _named(documents, "ConfigMap"), _named(documents, "Secret")
    assert re.fullmatch(r"tortoise-bot-[a-z0-9]{10}", config_map["metadata"]["name"])
    assert re.fullmatch(r"tortoise-bot-[a-z0-9]{10}", secret["metadata"]["name"])
    assert set(secret["data"]) == {"GITHUB_TOKEN"}
    settings_file = tmp_path / "bot.yaml"
    settings_file.write_text(config_map["data"]["bot.yaml"])
    settings = load_bot_settings(settings_file)
    (workload,) = _workloads(documents)
    pod = _pod(workload)
    volumes = {v["name"]: v for v in pod["volumes"]}
    (container,) = pod["containers"]
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    assert (
        volumes[mounts["/etc/tortoise-bot"]]["configMap"]["name"] == config_map["metadata"]["name"]
    )
    env = {e["name"]: e.get("valueFrom", {}).get("secretKeyRef") for e in container["env"]}
    token = env[settings.github.token_env]
    assert token == {"name": secret["metadata"]["name"], "key": "GITHUB_TOKEN", "optional": True}
    for name in (settings.github.app_private_key_env, "TORTOISE_BOT_PROMETHEUS_TOKEN"):
        assert env[name]["name"] == secret["metadata"]["name"]


def test_the_placeholder_token_is_documented():
    placeholder = DEPLOY / "base" / "credentials" / "github-token"
    assert "REPLACE" in placeholder.read_text()
    guide = (PROJECT / "docs" / "deployment.md").read_text()
    assert "config/deploy/base/credentials/github-token" in guide
    assert "config/deploy/base/bot.yaml" in guide


def test_the_sharded_example_is_an_indexed_cronjob_with_one_pod_per_shard(rendered):
    (cronjob,) = _workloads(rendered["sharded"])
    assert cronjob["kind"] == "CronJob" and cronjob["spec"]["concurrencyPolicy"] == "Forbid"
    job = cronjob["spec"]["jobTemplate"]["spec"]
    assert job["completionMode"] == "Indexed"
    (container,) = job["template"]["spec"]["containers"]
    script = container["command"][-1]
    shards = re.search(r'--shard "\$JOB_COMPLETION_INDEX/(\d+)"', script)
    assert shards is not None, script
    assert job["completions"] == job["parallelism"] == int(shards.group(1))


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_image_is_named_once_with_how_to_build_it(rendered, example):
    (workload,) = _workloads(rendered[example])
    images = {c["image"] for c in _pod(workload)["containers"]}
    assert images == {f"{IMAGE}:{__version__}"}
    component = (DEPLOY / "image" / "kustomization.yaml").read_text()
    assert "docker build -t REGISTRY/tortoise-bot:TAG ." in component
    assert "docker push REGISTRY/tortoise-bot:TAG" in component
    assert "docs/deployment.md#the-image" in component
    guide = (PROJECT / "docs" / "deployment.md").read_text()
    section = guide.split("### The image\n", 1)[1].split("\n#", 1)[0]
    assert "docker build" in section and "docker push" in section
    # no manifest names a tag of its own: the component is the one place
    for path in DEPLOY.rglob("*.yaml"):
        if path.parent.name != "image":
            assert not re.search(r"image: \S+:\S+", path.read_text()), path


def test_the_action_caches_its_install_keyed_on_pyproject_and_sources(tmp_path):
    action = YAML(typ="safe").load((PROJECT / "action.yml").read_text())
    steps = action["runs"]["steps"]
    ids = [s.get("id") for s in steps]
    cache = steps[ids.index("cache")]
    assert str(cache["uses"]).startswith("actions/cache@")
    assert cache["with"]["key"] == "${{ steps.install.outputs.key }}"
    install = next(s for s in steps if s.get("name") == "Install tortoise-bot")
    assert install["if"] == "steps.cache.outputs.cache-hit != 'true'"
    assert ids.index("install") < ids.index("cache") < steps.index(install)

    def key(root: Path) -> str:
        output = tmp_path / "output"
        output.write_text("")
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(tmp_path),
            "GITHUB_ACTION_PATH": str(root),
            "GITHUB_OUTPUT": str(output),
            "RUNNER_OS": "Linux",
            "RUNNER_ARCH": "X64",
            "PYTHON_VERSION": "3.11.9",
        }
        step = steps[ids.index("install")]
        subprocess.run(["bash", "-e", "-c", step["run"]], env=env, check=True, cwd=tmp_path)
        values = dict(line.split("=", 1) for line in output.read_text().splitlines())
        assert values["venv"] == f"{tmp_path}/.cache/tortoise-bot-action/venv"
        return values["key"]

    copy = tmp_path / "action"
    copy.mkdir()
    for name in ("pyproject.toml", "setup.py", "bot", "templates"):
        source = PROJECT / name
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, copy / name)
    first = key(copy)
    assert first.startswith("tortoise-bot-Linux-X64-py3.11.9-")
    assert key(copy) == first
    (copy / "pyproject.toml").write_text((copy / "pyproject.toml").read_text() + "\n# changed\n")
    changed = key(copy)
    assert changed != first
    (copy / "bot" / "cli.py").write_text((copy / "bot" / "cli.py").read_text() + "\n")
    assert key(copy) != changed
