"""The product end to end: simulator -> real Prometheus -> ``tortoise-bot run`` -> local GitHub.

The demo shop's history is simulated, backfilled into a real Prometheus with promtool, and its
manifests pushed to a repository of the GitHub emulator (which validates every request and
response against GitHub's OpenAPI description). ``tortoise-bot run`` is started as a process,
exactly as the GitHub Action and the container start it. Every pull request must carry exactly
the edit that ``plan --write`` makes for its workload, with a rationale table, the dashboard must
list every workload, and an unchanged second run must not write anything.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from bot.demo.spec import DEMO_LABELS, demo_cluster, demo_spec
from bot.report.markdown import escape
from tests.support.prometheus import prometheus_from_cluster

DEMO_REPO = Path(__file__).resolve().parents[2] / "bot" / "demo" / "repo"
TOKEN = "ghp_e2eTOKENe2eTOKENe2eTOKENe2eTOKEN00"


@pytest.fixture(scope="module")
def demo_prometheus(tmp_path_factory):
    spec = demo_spec()
    with prometheus_from_cluster(
        demo_cluster(spec), tmp_path_factory.mktemp("prom"), labels=DEMO_LABELS
    ) as prom:
        prom.extra["now"] = datetime.fromtimestamp(spec.end_s, UTC).isoformat()
        yield prom


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _run(cli, config: Path, now: str, **env: str):
    """``tortoise-bot run --config CONFIG --now NOW`` with the test token (and ``env``)."""
    return cli("run", "--config", str(config), "--now", now, env={"GITHUB_TOKEN": TOKEN, **env})


def _bot_config(
    path: Path, prom_url: str, api_url: str, recommend: dict[str, object] | None = None
) -> Path:
    config: dict[str, object] = {
        "repositories": ["octo/shop"],
        "prometheus": {"url": prom_url, "window_days": 8, "step_s": 120, "gzip": False},
        "github": {
            "api_url": api_url,
            "seconds_between_requests": None,
            "seconds_between_writes": None,
            "retries": 1,
            "backoff_factor": 0.001,
        },
        "prices": {"cpu_core_month": 24.0, "memory_gib_month": 3.0},
    }
    if recommend is not None:
        config["recommend"] = recommend
    with path.open("w") as out:
        YAML().dump(config, out)
    return path


def test_run_opens_one_verified_pull_request_per_workload(
    cli, tmp_path, demo_prometheus, github_emulator
):
    gh = github_emulator
    gh.create_repository("octo", "shop", _files(DEMO_REPO))
    gh.add_token(TOKEN, "tortoise-bot")
    config = _bot_config(tmp_path / "bot.yaml", demo_prometheus.url, gh.api_url)
    now = demo_prometheus.extra["now"]

    # What the bot should propose: plan --write on a local copy, from the same Prometheus.
    local = tmp_path / "local"
    shutil.copytree(DEMO_REPO, local)
    planned = cli(
        "plan",
        "--repo",
        str(local),
        "--config",
        str(config),
        "--now",
        now,
        "--format",
        "json",
        "--write",
    )
    plan = json.loads(planned.stdout)
    changed = {w["name"]: w for w in plan["workloads"] if w["status"] == "changes"}
    assert len(changed) >= 3, planned.stdout[-2000:]

    summary = tmp_path / "summary.md"
    run = _run(cli, config, now, GITHUB_STEP_SUMMARY=str(summary))
    assert run.returncode == 0, run.stdout + run.stderr
    assert TOKEN not in run.stdout + run.stderr

    pulls = gh.pulls("octo/shop", state="open")
    assert len(pulls) == len(changed)
    bare = gh.repository("octo/shop").git
    for pull in pulls:
        workload = next(
            w
            for n, w in changed.items()
            if pull.pull is not None and pull.pull.head.endswith(f"/{n}")
        )
        for path in workload["files"]:
            assert pull.pull is not None
            on_branch = bare.read_file(pull.pull.head, path)
            assert on_branch == (local / path).read_bytes(), f"{pull.pull.head}: {path} differs"
        body = pull.body or ""
        assert workload["name"] in pull.title
        for container in workload["containers"]:
            assert container["name"] in body
        if any(
            c["cpu"]["request"]["proposed"] != c["cpu"]["request"]["current"]
            or c["memory"]["request"]["proposed"] != c["memory"]["request"]["current"]
            for c in workload["containers"]
        ):
            assert "```mermaid" in body  # one chart of the week
        # The replay, with replicas, at the configured prices: the same figures as the plan.
        replayed = workload["replay"]
        assert "under this proposal" in body and "| predicted OOM kills |" in body
        assert f"${replayed['proposed']['monthly_cost']:,.2f}" in body.split("\n", 1)[0]
    dashboard = gh.issues("octo/shop")
    assert len(dashboard) == 1
    for name in ("frontend", "cart", "checkout", "redis"):
        assert name in (dashboard[0].body or "")
    assert "octo/shop" in summary.read_text()
    current = sum(w["replay"]["current"]["monthly_cost"] for w in changed.values())
    proposed = sum(w["replay"]["proposed"]["monthly_cost"] for w in changed.values())
    assert f"\\${current:,.2f} → \\${proposed:,.2f}/month" in summary.read_text()
    assert "OOM kills 2 → 0" in (dashboard[0].body or "")

    # An unchanged second run touches nothing.
    gh.reset_calls()
    again = _run(cli, config, now)
    assert again.returncode == 0, again.stderr
    assert gh.writes() == [], [str(c) for c in gh.writes()]
    assert not [c for c in gh.git_calls() if "receive-pack" in c.path]
    gh.assert_valid()


def test_a_run_where_every_workload_lacks_data_prints_the_diagnosis(
    cli, tmp_path, demo_prometheus, github_emulator
):
    gh = github_emulator
    gh.create_repository("octo", "shop", _files(DEMO_REPO))
    gh.add_token(TOKEN, "tortoise-bot")
    config = _bot_config(tmp_path / "bot.yaml", demo_prometheus.url, gh.api_url)
    settings = YAML().load(config.read_text())
    settings["prometheus"]["labels"] = {"container": "container_name"}  # not what the series say
    with config.open("w") as out:
        YAML().dump(settings, out)
    run = _run(cli, config, demo_prometheus.extra["now"])
    flat = " ".join(run.stderr.split())
    assert "every workload lacks data" in flat, run.stdout + run.stderr
    assert "series carry `container`, not `container_name`" in flat
    assert "set prometheus.labels.container: container" in flat


def test_prometheus_down_fails_that_repository_only(cli, tmp_path, github_emulator):
    gh = github_emulator
    gh.create_repository("octo", "shop", _files(DEMO_REPO))
    gh.add_token(TOKEN, "tortoise-bot")
    config = _bot_config(tmp_path / "bot.yaml", "http://127.0.0.1:9", gh.api_url)
    run = cli("run", "--config", str(config), env={"GITHUB_TOKEN": TOKEN})
    assert run.returncode == 1
    assert "octo/shop" in run.stdout and "FAILED" in run.stdout
    assert gh.pulls("octo/shop") == []


def test_a_bad_opt_in_file_is_reported_on_its_dashboard_and_the_others_run(
    cli, tmp_path, demo_prometheus, github_emulator
):
    gh = github_emulator
    good = _files(DEMO_REPO)
    bad = dict(good)
    bad[".tortoise-bot.yaml"] = b"update_mode: sometimes\npull_requests:\n  max_open: -3\n"
    not_opted_in = {k: v for k, v in good.items() if k != ".tortoise-bot.yaml"}
    gh.create_repository("octo", "bad", bad)
    gh.create_repository("octo", "shop", good)
    gh.create_repository("octo", "quiet", not_opted_in)
    gh.add_token(TOKEN, "octo")
    config = _bot_config(tmp_path / "bot.yaml", demo_prometheus.url, gh.api_url)
    text = config.read_text().replace("repositories:\n- octo/shop\n", "repositories: []\n")
    config.write_text(text)

    run = _run(cli, config, demo_prometheus.extra["now"])
    assert run.returncode == 1, run.stdout + run.stderr
    lines = {line.split()[1]: line for line in run.stdout.splitlines() if line.strip()}
    assert lines["octo/bad"].lstrip().startswith("FAILED")
    assert lines["octo/shop"].lstrip().startswith("ok")
    assert "not opted in" in lines["octo/quiet"]

    (dashboard,) = gh.issues("octo/bad")
    body = dashboard.body or ""
    assert "`.tortoise-bot.yaml:1: update_mode: Input should be 'off' or 'auto'`" in body
    assert "`.tortoise-bot.yaml:3: pull_requests.max_open: Input should be greater than" in body
    assert gh.pulls("octo/bad") == []
    assert gh.pulls("octo/shop", state="open")
    assert gh.issues("octo/quiet") == [] and gh.pulls("octo/quiet") == []
    gh.assert_valid()


def test_outside_the_schedule_window_only_the_dashboard_changes(
    cli, tmp_path, demo_prometheus, github_emulator
):
    gh = github_emulator
    files = _files(DEMO_REPO)
    # The demo history ends on Thursday 2026-01-08 23:58 UTC: a Monday-only window is closed.
    files[".tortoise-bot.yaml"] += b"  schedule: {days: [mon], start_hour: 9, end_hour: 17}\n"
    gh.create_repository("octo", "shop", files)
    gh.add_token(TOKEN, "tortoise-bot")
    config = _bot_config(tmp_path / "bot.yaml", demo_prometheus.url, gh.api_url)
    run = _run(cli, config, demo_prometheus.extra["now"])
    assert run.returncode == 0, run.stdout + run.stderr
    assert gh.pulls("octo/shop") == []
    (dashboard,) = gh.issues("octo/shop")
    assert "outside the pull-request schedule window" in (dashboard.body or "")


def _headless(body: str) -> str:
    """``body`` without the head commit its hidden state records (a preview has no commit)."""
    return re.sub(r'"head":"[0-9a-f]{40}"', '"head":"-"', body)


def test_the_preview_writes_what_github_receives(cli, tmp_path, demo_prometheus, github_emulator):
    """``run --dry-run --out`` on a local copy, from the same Prometheus and settings, writes
    the titles, labels, bodies, commits and dashboard a real run sends to GitHub, and sends
    nothing to GitHub itself."""
    gh = github_emulator
    gh.create_repository("octo", "shop", _files(DEMO_REPO))
    gh.add_token(TOKEN, "tortoise-bot")
    config = _bot_config(tmp_path / "bot.yaml", demo_prometheus.url, gh.api_url)
    now = demo_prometheus.extra["now"]
    assert _run(cli, config, now).returncode == 0
    gh.reset_calls()

    local = tmp_path / "shop"
    shutil.copytree(DEMO_REPO, local)
    out = tmp_path / "preview"
    args = ("--config", str(config), "--now", now, "--repo", str(local), "--out", str(out))
    preview = cli("run", "--dry-run", *args, env={"GITHUB_TOKEN": ""})
    assert preview.returncode == 0, preview.stdout + preview.stderr
    assert gh.rest_calls() == [] and gh.git_calls() == []

    pulls = sorted(gh.pulls("octo/shop", state="open"), key=lambda p: p.number)
    files = sorted((out / "shop").glob("*.md"))
    assert [f.name for f in files][-1] == "dashboard.md"
    assert len(files) - 1 == len(pulls) >= 3
    dashboard = gh.issues("octo/shop")[0].body or ""
    bare = gh.repository("octo/shop").git
    for pull, written in zip(pulls, files, strict=False):
        head, _, body = written.read_text().partition("\n---\n\n")
        assert _headless(body) == _headless(pull.body or "")
        assert f"# {escape(pull.title)}\n" in head and "- labels: `right-sizing`" in head
        assert pull.pull is not None and f"- branch: `{pull.pull.head}`" in head
        assert pull.labels == ["right-sizing"]
        # the patch, applied to the base, gives the files on the bot's branch
        patch = written.with_suffix(".patch")
        base = tmp_path / f"applied-{pull.number}"
        shutil.copytree(DEMO_REPO, base)
        subprocess.run(["git", "init", "-q", str(base)], check=True)
        subprocess.run(["git", "-C", str(base), "apply", str(patch)], check=True)
        for path in re.findall(r"^\+\+\+ b/(\S+)$", patch.read_text(), re.M):
            assert bare.read_file(pull.pull.head, path) == (base / path).read_bytes(), path
        link = re.search(rf"\[#{pull.number}\]\(([^)]+)\)", dashboard)
        assert link is not None, dashboard
        dashboard = dashboard.replace(link.group(0), f"[#{pull.number}]({written.name})")
    assert (out / "shop" / "dashboard.md").read_text() == dashboard
    index = (out / "index.md").read_text()
    assert all(f"(shop/{f.name})" in index for f in files)
