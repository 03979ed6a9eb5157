"""Output at 60, 80 and 120 columns never cuts a value: on the demo and on a repository of 40
overlays with long paths, every word of the full-width output appears whole at the narrow width
(and no word appears there that the full width does not have), no line is wider than asked but
for one unbreakable word, proposals read as the diff writes them, identical errors come once
with a count, and ``explain`` shows its inputs in units."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rich.cells import cell_len

from bot.cli import main

WIDTHS = (60, 80, 120)
REGIONS = ("asia-northeast1", "europe-west4", "us-central1", "southamerica-east1")
NAME_HEADERS = {"status", "workload", "container"}
"""Headers of the columns of names (``bot.commands.plan``: never broken)."""
WORKLOAD = "settlement-ledger-reconciliation-worker"


def overlay(i: int) -> str:
    """The path (and environment name) of the ``i``-th of the 40 overlays."""
    region = REGIONS[i % len(REGIONS)]
    return f"clusters/{region}/production/tenants/payments-platform/overlays/cell-{i:02d}"


DEPLOYMENT = f"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: {WORKLOAD}
  namespace: payments
spec:
  replicas: 3
  template:
    spec:
      containers:
        - name: reconciler
          image: example/reconciler:1.0
          resources:
            requests:
              cpu: 500m
              memory: 1Gi
            limits:
              cpu: "1"
              memory: 2Gi
"""


@pytest.fixture(scope="module")
def many_overlays(tmp_path_factory) -> tuple[Path, Path]:
    """A repository of 40 environments, each a directory of plain YAML deep under a long
    common path declaring the same long-named workload, and a simulated history of it."""
    root = tmp_path_factory.mktemp("bank") / "repo"
    envs = [overlay(i) for i in range(40)]
    for path in envs:
        (root / path).mkdir(parents=True)
        (root / path / "deployment.yaml").write_text(DEPLOYMENT)
    (root / ".tortoise-bot.yaml").write_text(
        "environments:\n" + "".join(f"  - name: {e}\n    propose: true\n" for e in envs)
    )
    snapshot = root.parent / "history.zip"
    assert main(["simulate", "--repo", str(root), "--out", str(snapshot), "--seed", "1"]) == 0
    return root, snapshot


def output(capsys, monkeypatch, width: int, *argv: str) -> str:
    monkeypatch.setenv("COLUMNS", str(width))
    capsys.readouterr()
    main([*argv, "--color", "never"])
    return capsys.readouterr().out


def text_part(out: str) -> str:
    """The output before the unified diff (diff lines are never wrapped)."""
    return out.split("\n--- a/", 1)[0]


def assert_fits(narrow: str, wide: str, width: int) -> None:
    """Every word of ``wide`` whole in ``narrow`` (but the headers of name columns, which a
    table shown one row at a time leaves out) and no word in ``narrow`` that ``wide`` lacks (a
    cut one); every line of ``narrow`` within ``width`` unless it is one word alone."""
    assert set(narrow.split()) <= set(wide.split())
    assert set(wide.split()) - set(narrow.split()) <= NAME_HEADERS
    too_long = [line for line in narrow.splitlines() if cell_len(line) > width]
    assert [line for line in too_long if len(line.split()) > 1] == []


@pytest.fixture(scope="module")
def demo_wide() -> str:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("COLUMNS", "1000")
        import io
        import sys

        out = io.StringIO()
        patch.setattr(sys, "stdout", out)
        main(["plan", "--demo", "--color", "never"])
    return out.getvalue()


@pytest.mark.parametrize("width", WIDTHS)
def test_the_demo_keeps_every_value_whole(capsys, monkeypatch, demo_wide, width):
    narrow = output(capsys, monkeypatch, width, "plan", "--demo")
    assert_fits(text_part(narrow), text_part(demo_wide), width)
    # the proposal reads as the diff writes it: cart's limit of 0.646 cores is written "0.65"
    assert "cpu limit 1 → 0.65," in " ".join(narrow.split())
    assert '+              cpu: "0.65"' in narrow


@pytest.fixture(scope="module")
def many_overlays_wide(many_overlays: tuple[Path, Path]) -> str:
    """The plan of ``many_overlays`` at 1,000 columns, before its diff (once for every width)."""
    root, snapshot = many_overlays
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("COLUMNS", "1000")
        import io
        import sys

        out = io.StringIO()
        patch.setattr(sys, "stdout", out)
        main(["plan", "--repo", str(root), "--snapshot", str(snapshot), "--color", "never"])
    return text_part(out.getvalue())


@pytest.mark.slow  # a plan of 40 workloads at each width
@pytest.mark.parametrize("width", WIDTHS)
def test_forty_overlays_keep_every_value_whole(
    capsys, monkeypatch, many_overlays, many_overlays_wide, width
):
    root, snapshot = many_overlays
    argv = ("plan", "--repo", str(root), "--snapshot", str(snapshot))
    wide = many_overlays_wide
    narrow = text_part(output(capsys, monkeypatch, width, *argv))
    assert_fits(narrow, wide, width)
    summary = narrow.split("\n\n", 2)[1]
    # the common prefix of the overlay paths is left out of the names: the shortest that tell
    # the workloads apart, which explain accepts
    names = re.findall(rf"^\S+\s+({re.escape(WORKLOAD)}\S*)", summary, re.MULTILINE)
    assert sorted(names) == [f"{WORKLOAD}@cell-{i:02d}" for i in range(40)]
    assert "payments-platform" not in summary
    if width >= 80:  # side by side: the summary keeps one line per workload first
        assert all(cell_len(line) <= width for line in summary.splitlines())
    explained = output(capsys, monkeypatch, width, "explain", *argv[1:], f"{WORKLOAD}@cell-07")
    assert explained.startswith(f"Deployment/payments/{WORKLOAD}@{overlay(7)}:")


@pytest.mark.parametrize("width", WIDTHS)
def test_explain_fits_and_shows_inputs_in_units(capsys, monkeypatch, width):
    wide = output(capsys, monkeypatch, 1000, "explain", "--demo", "frontend")
    narrow = output(capsys, monkeypatch, width, "explain", "--demo", "frontend")
    assert_fits(narrow, wide, width)
    assert not re.search(r"\w=\d", narrow)  # no raw key=number inputs (bytes such as 5e8)
    assert "inputs: rec 560.6 MiB, VPA target 488.1 MiB" in wide
    cart = output(capsys, monkeypatch, 1000, "explain", "--demo", "cart")
    assert "1 → 0.65 " in cart  # 0.646 cores, as the diff writes it


def test_identical_errors_come_once_with_a_count(capsys, monkeypatch, tmp_path):
    """Three Kustomize overlays without kubectl: one line, not three."""
    for name in ("dev", "staging", "prod"):
        overlay_dir = tmp_path / "repo" / "overlays" / name
        overlay_dir.mkdir(parents=True)
        (overlay_dir / "kustomization.yaml").write_text("resources:\n  - ../../base\n")
    (tmp_path / "repo" / "base").mkdir()
    (tmp_path / "repo" / "base" / "kustomization.yaml").write_text("resources: []\n")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    out = output(capsys, monkeypatch, 80, "validate", str(tmp_path / "repo"))
    errors = out.split("\nwarning: ")[1:]  # a finding in the repository
    assert len(errors) == 1, out
    error = " ".join(errors[0].split())
    assert error.startswith("kubectl not found") and "(3 files; first overlays/" in error


def test_a_reason_in_the_changes_column_breaks_between_its_words():
    """A skipped workload's reason sits in the summary's column of changes, which breaks only
    between changes: as ``Prose`` it breaks between its words."""
    from bot.console import LIST, Prose, wrap_cell

    reason = "not proposed for: reads the same pods as environment 'overlays/cell-00', there"
    assert (
        wrap_cell(reason, LIST, 30)[0]
        == "not proposed for: reads the same pods as environment 'overlays/cell-00',"
    )
    lines = wrap_cell(Prose(reason), LIST, 30)
    assert all(len(line) <= 30 for line in lines) and " ".join(lines) == reason


@pytest.mark.parametrize("width", WIDTHS)
def test_where_each_environment_is_deployed_wraps_at_the_width(
    capsys, monkeypatch, tmp_path, width
):
    """``validate``'s lines on the Argo CD applications (where each overlay is deployed, what
    it was merged into) wrap between words like every other line."""
    from tests.manifests.gitops_repos import argo_bank

    def repo(files: dict[str, str]) -> Path:
        for name, text in files.items():
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_text(text)
        return tmp_path

    root = argo_bank(repo)
    wide = output(capsys, monkeypatch, 400, "validate", "--repo", str(root))
    out = output(capsys, monkeypatch, width, "validate", "--repo", str(root))
    assert "deployed to cluster prod-eu, namespace bank" in " ".join(out.split())
    assert out.split() == wide.split()  # the same words, none cut
    for line in out.splitlines():
        assert cell_len(line) <= width or len(line.split()) == 1, line
