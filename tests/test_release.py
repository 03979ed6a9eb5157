"""The release: one version source, checked against the tag; the workflow builds and publishes
what the examples name (actionlint runs on it with the other workflows in test_packaging)."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from typing import Any

import pytest
from ruamel.yaml import YAML

from bot import __version__
from tests.conftest import PROJECT

RELEASE = PROJECT / ".github" / "workflows" / "release.yml"
SCRIPT = PROJECT / "scripts" / "release_version.py"
MAJOR = __version__.split(".")[0]


@pytest.fixture(scope="module")
def release() -> dict[str, Any]:
    data: dict[str, Any] = YAML(typ="safe").load(RELEASE.read_text())
    return data


def _check(tag: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), tag], capture_output=True, text=True, check=False
    )


def _steps(job: dict[str, Any]) -> str:
    """A job's steps as text (``uses`` and ``with``/``run``), for searching."""
    return "\n".join(str(step) for step in job["steps"])


def test_the_wheel_version_is_bot_version():
    project = tomllib.loads((PROJECT / "pyproject.toml").read_text())
    assert "version" not in project["project"]
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "bot.__version__"}


def test_the_version_check_accepts_the_matching_tag():
    done = _check(f"v{__version__}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"version={__version__}",
        f"major={MAJOR}",
        f"prerelease={'true' if '-' in __version__ else 'false'}",
    ]


@pytest.mark.parametrize("tag", ["v9.9.9", __version__, f"v{__version__}-rc.1"])
def test_the_version_check_refuses_another_tag(tag):
    done = _check(tag)
    assert done.returncode == 1 and done.stdout == ""
    assert f"tag {tag!r} is not v + bot.__version__ (v{__version__})" in done.stderr


def test_the_examples_run_this_version():
    named = re.compile(r'newName: ghcr\.io/tortoise-bot/tortoise-bot\s+newTag: "([^"]+)"')
    tags = {
        tag
        for p in (PROJECT / "config" / "deploy").rglob("*.yaml")
        for tag in named.findall(p.read_text())
    }
    assert tags == {__version__}
    uses = re.findall(
        r"tortoise-bot/tortoise-bot@([\w.]+)",
        (PROJECT / "config" / "github-actions" / "tortoise-bot.yml").read_text()
        + (PROJECT / "docs" / "deployment.md").read_text(),
    )
    assert uses and set(uses) == {f"v{MAJOR}"}


def test_release_runs_on_version_tags_after_the_version_check_and_the_tests(release):
    assert release["on"]["push"]["tags"] == ["v[0-9]+.[0-9]+.[0-9]+*"]
    jobs = release["jobs"]
    assert 'scripts/release_version.py "$GITHUB_REF_NAME"' in _steps(jobs["version"])
    assert jobs["test"]["uses"] == "./.github/workflows/ci.yml"
    ci = YAML(typ="safe").load((PROJECT / ".github" / "workflows" / "ci.yml").read_text())
    assert "workflow_call" in ci["on"]
    for name in ("wheel", "image"):
        assert set(jobs[name]["needs"]) == {"version", "test"}


def test_release_builds_the_wheel_of_the_tagged_version(release):
    steps = _steps(release["jobs"]["wheel"])
    assert "python -m build" in steps
    assert 'wheel="dist/tortoise_bot-$VERSION-cp311-cp311-linux_x86_64.whl"' in steps
    assert "sys.exit(not x.AVAILABLE)" in steps  # the wheel's decoder loads
    assert "actions/attest-build-provenance" in steps


def test_release_pushes_a_multi_arch_image_with_sbom_and_provenance(release):
    job = release["jobs"]["image"]
    assert job["permissions"]["packages"] == "write"
    build = next(s for s in job["steps"] if str(s.get("uses", "")).startswith("docker/build-push"))
    assert build["with"]["platforms"].split(",") == ["linux/amd64", "linux/arm64"]
    assert build["with"]["push"] is True and build["with"]["sbom"] is True
    assert build["with"]["provenance"] == "mode=max"
    steps = _steps(job)
    assert "docker/setup-buildx-action" in steps and "docker/setup-qemu-action" in steps
    meta = next(s for s in job["steps"] if s.get("id") == "meta")
    assert meta["with"]["images"] == "ghcr.io/${{ github.repository }}"
    tags = meta["with"]["tags"].split()
    assert tags == [
        "type=semver,pattern={{version}}",
        "type=semver,pattern={{major}}.{{minor}}",
        "type=semver,pattern={{major}}",
    ]
    assert "latest=${{ needs.version.outputs.prerelease == 'false' }}" in meta["with"]["flavor"]


def test_release_moves_the_action_major_tag_and_publishes_notes(release):
    jobs = release["jobs"]
    moving = _steps(jobs["action-tag"])
    assert 'git tag --force "v$MAJOR" "$GITHUB_SHA"' in moving
    assert 'git push --force origin "refs/tags/v$MAJOR"' in moving
    assert jobs["action-tag"]["if"] == "needs.version.outputs.prerelease == 'false'"
    publish = _steps(jobs["release"])
    assert "gh release create" in publish and "--generate-notes" in publish
    assert set(jobs["release"]["needs"]) == {"version", "wheel", "image", "action-tag"}


def test_version_option_prints_bot_version(cli):
    done = cli("--version")
    assert done.stdout.splitlines()[0] == f"tortoise-bot {__version__}"
