"""Exit codes by whose problem it is (``bot.errors.exit_code``, ``docs/cli.md``): findings in the
repository are warnings (0), the bot's own failures 1, usage and opt-in errors 2, and
``validate --strict`` fails on findings for linting in CI."""

from __future__ import annotations

import pytest

from bot.errors import EXIT_FAILED, EXIT_OK, exit_code
from tests.conftest import require_binary
from tests.manifests.components_layout import FWI, LAYOUT
from tests.manifests.conftest import write_tree

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  template:
    spec:
      containers:
      - name: app
        image: web:1
        resources:
          requests:
            cpu: 100m
"""
HPA = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {name}
  namespace: shop
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: {kind}
    name: {target}
  minReplicas: 1
  maxReplicas: 4
"""


@pytest.mark.parametrize(
    ("failures", "findings", "strict", "code"),
    [
        (0, 0, False, EXIT_OK),
        (0, 3, False, EXIT_OK),
        (0, 3, True, EXIT_FAILED),
        (1, 0, False, EXIT_FAILED),
        (1, 3, False, EXIT_FAILED),
        (0, 0, True, EXIT_OK),
    ],
)
def test_one_place_decides(failures, findings, strict, code):
    assert exit_code(failures=failures, findings=findings, strict=strict) == code


@pytest.mark.parametrize(
    "hpa",
    [
        # a StatefulSet an external Helm chart installs: not in the repository
        HPA.format(name="redis", kind="StatefulSet", target="redis-master"),
        # a misspelt scaleTargetRef
        HPA.format(name="web", kind="Deployment", target="wbe"),
    ],
)
def test_an_autoscaler_pointing_outside_the_repository_is_a_warning(cli, tmp_path, hpa):
    root = tmp_path / "repo"
    write_tree(root, {"web.yaml": DEPLOYMENT, "hpa.yaml": hpa})
    done = cli("validate", str(root))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "warning: hpa.yaml:" in done.stdout
    assert "Deployment/shop/web@default" in done.stdout
    strict = cli("validate", "--strict", str(root))
    assert strict.returncode == 1
    assert strict.stdout == done.stdout  # the same listing, only the verdict differs


def test_a_clean_repository_passes_strict(cli, tmp_path):
    root = tmp_path / "repo"
    write_tree(root, {"web.yaml": DEPLOYMENT})
    done = cli("validate", "--strict", str(root))
    assert done.returncode == 0, done.stdout
    assert "warning:" not in done.stdout


def test_an_invalid_opt_in_file_is_a_usage_error(cli, tmp_path):
    root = tmp_path / "repo"
    write_tree(root, {"web.yaml": DEPLOYMENT, ".tortoise-bot.yaml": "paths:\n  includ: [x]\n"})
    done = cli("validate", str(root))
    assert done.returncode == 2
    assert "error: .tortoise-bot.yaml:2:" in done.stdout


@pytest.mark.slow  # a whole plan in a subprocess
def test_plan_with_an_edit_refused_is_done_work(cli, tmp_path):
    require_binary("kubectl")
    root = tmp_path / "repo"
    files = {
        **LAYOUT,
        f"{FWI}/prefix.yaml": (
            "apiVersion: builtin\nkind: PrefixSuffixTransformer\nmetadata:\n  name: prefix\n"
            "prefix: bank-\nfieldSpecs:\n- path: metadata/name\n"
        ),
    }
    files[f"{FWI}/kustomization.yaml"] += "transformers:\n- prefix.yaml\n"
    write_tree(root, files)
    history = tmp_path / "history.zip"
    made = cli("simulate", "--repo", str(root), "--out", str(history), "--days", "14")
    assert made.returncode == 0, made.stderr
    done = cli("plan", "--repo", str(root), "--snapshot", str(history), timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    words = " ".join(done.stdout.split())  # wrapped to the terminal's width
    assert "edit refused, nothing written" in words
    assert "base/userservice.yaml:1:" in words  # the object, not the kustomization at line 0
    assert "no resource matches strategic merge patch" in words  # kustomize's reason
    assert "To do: make the proposed change by hand" in words
    missing = cli("plan", "--repo", str(root), "--snapshot", str(tmp_path / "nope.zip"))
    assert missing.returncode == 2  # a bad input file: usage
