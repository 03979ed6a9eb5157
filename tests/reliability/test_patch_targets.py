"""Kustomize patch targets are regular expressions the repository writes: matched in linear time
(RE2, anchored as Kustomize anchors them), a bad one is a finding at its file and line.

``name: "(a+)+"`` against a Deployment named ``aaa…ab`` doubled its time per character on
Python's backtracking ``re`` (18.6 s at 28 characters with ``validate``); ``name: "(["`` was an
internal error with a traceback.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from bot.config.manifests import PathsConfig
from bot.manifests.errors import KustomizeError
from bot.manifests.files import RepoFiles
from bot.manifests.kustomize import Kustomizer
from bot.manifests.selectors import MAX_PATTERN_CHARS, target_pattern
from bot.manifests.yamldoc import load_plain
from tests.reliability.hostile import deployment

EVIL_NAME = "a" * 30 + "b"
"""With ``(a+)+`` about 2^30 backtracking steps in Python's ``re``: minutes."""


def _overlay(root: Path, target: str, names: tuple[str, ...]) -> Path:
    """A kustomization whose one patch sets ``replicas: 3`` on the Deployments ``target`` selects
    (``target`` is the YAML flow mapping of the selector), over Deployments ``names``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "deploy.yaml").write_bytes(b"---\n".join(deployment("shop", n) for n in names))
    (root / "kustomization.yaml").write_text(
        "resources: [deploy.yaml]\n"
        "patches:\n"
        f"  - target: {target}\n"
        "    patch: |-\n"
        "      - op: replace\n"
        "        path: /spec/replicas\n"
        "        value: 3\n"
    )
    return root


def _selected(root: Path) -> list[str]:
    """The Deployments the replayed build gave ``replicas: 3``."""
    build = Kustomizer(RepoFiles(root, PathsConfig())).build("")
    return sorted(o.name for o in build.objects if o.data["spec"]["replicas"] == 3)


def test_a_backtracking_pattern_is_matched_in_linear_time(tmp_path):
    root = _overlay(tmp_path, '{kind: Deployment, name: "(a+)+"}', (EVIL_NAME, "aaa"))
    began = time.monotonic()
    selected = _selected(root)
    took = time.monotonic() - began
    assert selected == ["aaa"]
    assert took < 5, f"{took:.1f} s"  # the backtracking engine needed minutes
    print(f"\npatch target (a+)+ against a {len(EVIL_NAME)}-character name: {took * 1000:.0f} ms")


def test_validate_on_a_backtracking_pattern_finishes(cli, tmp_path):
    root = _overlay(tmp_path / "repo", '{kind: Deployment, name: "(a+)+"}', (EVIL_NAME,))
    done = cli("validate", str(root), timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Deployment/shop/{EVIL_NAME}@." in done.stdout


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ('{name: "web|api"}', ["api"]),  # anchored around the alternation: not web-1, not xweb
        ('{name: "web.*"}', ["web-1"]),
        ('{name: "(?i)API"}', ["api"]),  # Go syntax: inline flags
        ('{kind: "Deploy.*", namespace: "sh(o|x)p"}', ["api", "web-1", "xweb"]),
        ('{group: apps, version: "v[0-9]", name: "x.*"}', ["xweb"]),
        ('{namespace: "other"}', []),
    ],
)
def test_targets_select_what_kubectl_kustomize_selects(tmp_path, target, expected):
    root = _overlay(tmp_path, target, ("web-1", "api", "xweb"))
    assert _selected(root) == expected
    rendered = subprocess.run(
        ["kubectl", "kustomize", str(root)], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    by_kubectl = sorted(
        d["metadata"]["name"] for d in load_plain(rendered) if d["spec"]["replicas"] == 3
    )
    assert by_kubectl == expected


def test_an_invalid_pattern_is_a_finding_at_its_line_and_the_rest_is_served(cli, tmp_path):
    repo = tmp_path / "repo"
    _overlay(repo / "broken", '{kind: Deployment, name: "(["}', ("web",))
    _overlay(repo / "fine", '{kind: Deployment, name: "web"}', ("web",))
    done = cli("validate", str(repo))
    assert "Traceback" not in done.stderr and "internal error" not in done.stdout + done.stderr
    assert done.returncode == 0, done.stdout + done.stderr  # a finding: a warning, exit 0
    assert "\n  \n" not in done.stdout
    assert (
        "warning: broken/kustomization.yaml:3: target name '([' is not a valid regular "
        "expression: missing ]: [" in " ".join(done.stdout.split())
    ), done.stdout
    assert "Deployment/shop/web@fine  replicas=3" in done.stdout
    assert cli("validate", "--strict", str(repo)).returncode == 1  # linting in CI


def test_a_pattern_is_bounded_and_its_error_names_the_field():
    with pytest.raises(KustomizeError, match=r"^k.yaml:7: target namespace pattern longer than"):
        target_pattern("a" * (MAX_PATTERN_CHARS + 1), "k.yaml", 7, "namespace")
    with pytest.raises(KustomizeError, match=r"^k.yaml:2: target kind 'a\\\\Z' is not a valid"):
        target_pattern("a\\Z", "k.yaml", 2, "kind")  # Python's re knows \Z; Go's RE2 does not
    assert target_pattern("a|b", "k.yaml", 1, "name").matches("b")
    assert not target_pattern("a|b", "k.yaml", 1, "name").matches("ab")
    assert not target_pattern("web", "k.yaml", 1, "name").matches("web\n")
