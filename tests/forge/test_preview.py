"""``run --dry-run --out DIR``: what a run would publish, written as files, with no forge and no
token (``bot.forge.preview``); the same bodies as GitHub receives are checked end to end in
``tests/e2e/test_run.py``."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from bot.cli import main
from bot.commands.common import DEMO_DIR
from bot.errors import EXIT_OK, EXIT_USAGE
from bot.forge.preview import DASHBOARD_FILE, INDEX_FILE
from bot.report.markdown import escape
from bot.report.proposal import parse_state

DEMO_WORKLOADS = ("cart", "frontend", "redis", "checkout")


@pytest.fixture
def no_token(monkeypatch: pytest.MonkeyPatch) -> None:
    """No forge credential in the environment, and no Prometheus named by it."""
    for name in ("GITHUB_TOKEN", "GITHUB_APP_PRIVATE_KEY", "TORTOISE_BOT_PROMETHEUS_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def demo_preview(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``run --dry-run --out DIR --demo`` once for the module; DIR."""
    out = tmp_path_factory.mktemp("preview")
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("GITHUB_TOKEN", raising=False)
        assert main(["run", "--dry-run", "--out", str(out), "--demo"]) == EXIT_OK
    return out


def test_the_demo_preview_writes_each_pull_request_its_patch_and_the_dashboard(demo_preview):
    folder = demo_preview / "demo-shop"
    pulls = sorted(folder.glob("*.md"))
    assert [p.name for p in pulls][-1] == DASHBOARD_FILE
    pulls = pulls[:-1]
    assert len(pulls) == len(DEMO_WORKLOADS)
    index = (demo_preview / INDEX_FILE).read_text()
    dashboard = (folder / DASHBOARD_FILE).read_text()
    for name in DEMO_WORKLOADS:
        (pull,) = [p for p in pulls if p.stem.endswith(f"-{name}")]
        text = pull.read_text()
        head, _, body = text.partition("\n---\n\n")
        assert head.startswith(f"# Right-size {name} in shop")
        assert "- labels: `right-sizing`" in head and "- draft: no" in head
        state = parse_state(body)
        assert state is not None and state.key.endswith(f"/{name}")
        assert f"(demo-shop/{pull.name})" in index
        assert f"(demo-shop/{pull.with_suffix('.patch').name})" in index
        assert f"]({pull.name})" in dashboard  # the dashboard links the pull request
    assert "(demo-shop/dashboard.md)" in index


def test_the_patches_apply_with_git_am_on_the_repository(demo_preview, tmp_path):
    repo = tmp_path / "shop"
    shutil.copytree(DEMO_DIR / "repo", repo)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    patches = sorted((demo_preview / "demo-shop").glob("*.patch"))
    for patch in patches:
        subprocess.run([*git, "am", "-q", str(patch)], check=True)
    log = subprocess.run(
        [*git, "log", "--format=%an <%ae>|%s"], check=True, capture_output=True, text=True
    ).stdout.splitlines()
    assert len(log) == len(patches) + 1
    assert all(line.startswith("tortoise-bot <") for line in log[:-1])
    assert all("|chore(resources): Right-size " in line for line in log[:-1])


def test_a_second_preview_is_identical_and_removes_what_no_longer_applies(
    demo_preview, tmp_path, no_token
):
    out = tmp_path / "out"
    shutil.copytree(demo_preview, out)
    stale = out / "demo-shop" / "09-gone.md"
    stale.write_text("an earlier preview")
    kept = out / "demo-shop" / "notes.txt"
    kept.write_text("not the preview's")
    assert main(["run", "--dry-run", "--out", str(out), "--demo"]) == EXIT_OK
    assert not stale.exists() and kept.exists()
    kept.unlink()
    written = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    expected = {
        p.relative_to(demo_preview): p.read_bytes() for p in demo_preview.rglob("*") if p.is_file()
    }
    assert written == expected


def test_a_local_repository_with_the_output_inside_it(tmp_path, no_token, capsys):
    """``--repo .`` with ``--out preview/``: the output is not planned as part of the
    repository, the checkout is left as it was, and a repository not opted in says so."""
    repo = tmp_path / "shop"
    shutil.copytree(DEMO_DIR / "repo", repo)
    quiet = tmp_path / "quiet"
    shutil.copytree(DEMO_DIR / "repo", quiet)
    (quiet / ".tortoise-bot.yaml").unlink()
    before = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file()}
    out = repo / "preview"
    args = ["--config", str(DEMO_DIR / "bot.yaml"), "--snapshot", str(DEMO_DIR / "snapshot.zip")]
    code = main(
        ["run", "--dry-run", *args, "--repo", str(repo), "--repo", str(quiet), "--out", str(out)]
    )
    assert code == EXIT_OK
    assert {
        p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and out not in p.parents
    } == before
    assert len(list((out / "shop").glob("*.patch"))) == len(DEMO_WORKLOADS)
    assert not (out / "quiet").exists()
    index = (out / INDEX_FILE).read_text()
    quiet_note = escape("not opted in (no .tortoise-bot.yaml)")
    assert f"## quiet\n\n{quiet_note}\n\n- no pull request" in index
    assert f"preview written: {out / INDEX_FILE}" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--out", "x", "--demo"], "--out writes a preview of the run: add --dry-run"),
        (["--dry-run", "--demo"], "--repo and --demo preview into files: add --dry-run --out DIR"),
        (["--dry-run", "--out", "x"], "--out previews local checkouts: pass --repo PATH or --demo"),
        (["--dry-run", "--out", "x", "--repo", "missing"], "--repo missing: not a directory"),
    ],
)
def test_preview_arguments_are_checked(args, message, tmp_path, monkeypatch, capsys, no_token):
    monkeypatch.chdir(tmp_path)
    assert main(["run", *args]) == EXIT_USAGE
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_below_the_money_threshold_only_risk_fixes_and_larger_changes_open(
    tmp_path, no_token, capsys
):
    """The demo's replayed monthly changes: cart -$9.60, checkout -$6.77, frontend -$18.22,
    and redis -$1.49, whose memory is raised for its OOM kills. At 10 a month, cart and
    checkout are held back; redis, a risk fix, opens however small."""
    repo = tmp_path / "shop"
    shutil.copytree(DEMO_DIR / "repo", repo)
    opt_in = repo / ".tortoise-bot.yaml"
    opt_in.write_text(opt_in.read_text() + "  min_monthly_change: 10\n")
    out = tmp_path / "out"
    args = ["--config", str(DEMO_DIR / "bot.yaml"), "--snapshot", str(DEMO_DIR / "snapshot.zip")]
    assert main(["run", "--dry-run", *args, "--repo", str(repo), "--out", str(out)]) == EXIT_OK
    opened = sorted(p.stem.rsplit("-", 1)[1] for p in (out / "shop").glob("*.patch"))
    assert opened == ["frontend", "redis"]
    dashboard = (out / "shop" / DASHBOARD_FILE).read_text()
    for name, change in (("cart", "-\\$9.60"), ("checkout", "-\\$6.77")):
        line = next(row for row in dashboard.splitlines() if f"/{name}" in row and "[ ]" in row)
        assert f"monthly cost change {change} is below" in line, line
    printed = capsys.readouterr().out
    assert "opened 2" in printed
    assert "2 held back below pull_requests.min_monthly_change" in printed.replace("\n", "")
