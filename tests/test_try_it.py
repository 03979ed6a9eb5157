"""A new user's first steps: the README's "Try it on your repository", command by command, on a
repository that is not the demo; ``simulate``'s snapshot read by ``run``; ``--demo`` on
``explain`` and ``validate``."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from bot.cli import main
from bot.config.repo import load_repo_config
from bot.manifests import discover
from bot.metrics.snapshot import read_snapshot
from bot.sim.declared import simulate_workloads
from tests.conftest import PROJECT
from tests.support.github import github_emulator  # noqa: F401  (fixture)

SECTION = "## Try it on your repository"
PROGRAM = ".venv/bin/tortoise-bot"
TOKEN = "ghp_tryTOKENtryTOKENtryTOKENtryTOKEN000"


def readme_commands() -> list[list[str]]:
    """The command lines of the section's code block, in order."""
    text = (PROJECT / "README.md").read_text()
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    return [shlex.split(line, comments=True) for line in block.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def shop_repo(shared_manifests, tmp_path_factory) -> Path:
    """Online Boutique's raw manifests (12 workloads, a kustomization): not the demo shop."""
    root = tmp_path_factory.mktemp("mine") / "repo"
    shutil.copytree(shared_manifests / "microservices-demo" / "kubernetes-manifests", root)
    return root


def test_the_readme_walkthrough_works_on_another_repository(cli, shop_repo, tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(shop_repo, repo)
    before = {p: p.read_bytes() for p in repo.rglob("*.yaml")}
    commands = readme_commands()
    assert [c[1] for c in commands][:2] == ["simulate", "validate"], "it starts with simulate"
    outputs = []
    for argv in commands:
        assert argv[0] == PROGRAM
        args = [str(repo) if a == "path/to/repo" else a for a in argv[1:]]
        done = cli(*args, cwd=tmp_path)
        assert done.returncode == 0, f"{shlex.join(argv)}:\n{done.stdout[-3000:]}{done.stderr}"
        outputs.append((args, done.stdout))

    (_, simulated), (_, validated), (_, planned), (_, explained), (_, written) = outputs
    snapshot = read_snapshot(tmp_path / "history.zip")
    assert len(snapshot.histories) == 12 and "simulated 12 workloads" in simulated
    assert {ref.name for ref in snapshot.histories} >= {"frontend", "cartservice", "redis-cart"}
    assert "Deployment/default/frontend@" in validated
    assert "cartservice" in planned and "--- a/" in planned  # the table and a diff
    assert explained.startswith("Deployment/default/frontend@")
    assert "vpa " in explained and "[simulated]" in explained
    changed = [p for p, data in before.items() if p.read_bytes() != data]
    assert changed, "plan --write applies the diff"
    assert all(f"--- a/{p.relative_to(repo).as_posix()}" in planned for p in changed)
    assert written.count("--- a/") == len(changed)


def _cpu_by_workload(repo: Path, **options) -> dict[str, float]:
    inventory = discover(repo, load_repo_config(repo)).inventory
    histories = simulate_workloads(
        inventory.workloads, days=7, step_s=60, end_s=1_772_409_600.0, **options
    )
    return {
        ref.name: float(h.containers[next(iter(h.containers))].cpu_cores.sum())
        for ref, h in histories.items()
    }


def test_simulate_is_seeded_and_profiles_differ(shop_repo):
    first = _cpu_by_workload(shop_repo, profile="weekly", seed=5)
    assert len(first) == 12
    assert _cpu_by_workload(shop_repo, profile="weekly", seed=5) == first
    assert _cpu_by_workload(shop_repo, profile="weekly", seed=6) != first
    assert _cpu_by_workload(shop_repo, profile="bursty", seed=5) != first


def test_simulate_refuses_what_it_cannot_use(tmp_path, capsys):
    assert main(["simulate", "--repo", str(tmp_path / "nope"), "--out", "h.zip"]) == 2
    assert "not a directory" in capsys.readouterr().err
    assert main(["simulate", "--repo", str(tmp_path), "--out", "h.zip", "--days", "0.5"]) == 2
    assert "--days 0.5: expected 1 to 90 days" in capsys.readouterr().err
    with pytest.raises(SystemExit) as caught:
        main(["simulate", "--repo", str(tmp_path), "--out", "h.zip", "--profile", "spiky"])
    assert caught.value.code == 2
    assert "usage: tortoise-bot simulate" in capsys.readouterr().err


def test_run_reads_a_simulated_history(cli, shop_repo, tmp_path, github_emulator, capsys):  # noqa: F811
    gh = github_emulator
    files = {p.relative_to(shop_repo).as_posix(): p.read_bytes() for p in shop_repo.rglob("*")}
    files = {k: v for k, v in files.items() if (shop_repo / k).is_file()}
    files[".tortoise-bot.yaml"] = b"update_mode: auto\npull_requests: {grouping: repository}\n"
    gh.create_repository("octo", "boutique", files)
    gh.add_token(TOKEN, "tortoise-bot")
    local = tmp_path / "boutique"  # a checkout of octo/boutique: the snapshot is its own
    local.mkdir()
    for name, data in files.items():
        (local / name).parent.mkdir(parents=True, exist_ok=True)
        (local / name).write_bytes(data)
    history = tmp_path / "history.zip"
    assert main(["simulate", "--repo", str(local), "--out", str(history), "--days", "8"]) == 0
    config = tmp_path / "bot.yaml"
    YAML().dump(
        {
            "repositories": ["octo/boutique"],
            "github": {
                "api_url": gh.api_url,
                "seconds_between_requests": None,
                "seconds_between_writes": None,
                "retries": 1,
                "backoff_factor": 0.001,
            },
        },
        config,
    )
    capsys.readouterr()
    assert main(["plan", "--repo", str(local), "--snapshot", str(history), "--format", "json"]) == 0
    planned = json.loads(capsys.readouterr().out)
    changed = sorted(w["name"] for w in planned["workloads"] if w["status"] == "changes")
    assert changed

    run = cli(
        "run", "--config", str(config), "--snapshot", str(history), env={"GITHUB_TOKEN": TOKEN}
    )
    assert run.returncode == 0, run.stdout + run.stderr
    (pull,) = gh.pulls("octo/boutique", state="open")
    for name in changed:
        assert name in (pull.body or "")
    gh.assert_valid()


def test_run_without_prometheus_or_snapshot_says_how(tmp_path, capsys, monkeypatch):
    config = tmp_path / "bot.yaml"
    config.write_text("repositories: [octo/x]\n")
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.delenv("TORTOISE_BOT_PROMETHEUS_URL", raising=False)
    assert main(["run", "--config", str(config)]) == 2
    assert "--snapshot FILE" in capsys.readouterr().err


def test_explain_and_validate_work_on_the_demo(capsys):
    assert main(["explain", "--demo", "redis"]) == 0
    assert capsys.readouterr().out.startswith("StatefulSet/shop/redis@default: changes")
    assert main(["explain", "--demo", "frontend", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["name"] == "frontend"
    assert main(["validate", "--demo"]) == 0
    assert "Deployment/shop/checkout@prod" in capsys.readouterr().out
    assert main(["validate", "--demo", str(PROJECT)]) == 2
    assert "PATH or --demo" in capsys.readouterr().err
    assert main(["explain", "--demo", "--snapshot", "x.zip", "redis"]) == 2
    assert "--demo brings its own history" in capsys.readouterr().err


def test_a_short_history_is_noted_once_with_dates(shop_repo, tmp_path, capsys):
    history = tmp_path / "week.zip"
    end = "2026-03-02T00:00:00Z"
    args = ["--repo", str(shop_repo), "--now", end]
    assert main(["simulate", *args, "--out", str(history), "--days", "7"]) == 0
    capsys.readouterr()
    assert main(["explain", *args, "--snapshot", str(history), "cartservice"]) == 0
    out = capsys.readouterr().out
    assert out.count("[snapshot-window]") == 1, out
    assert (
        "the snapshot covers 2026-02-23 00:00 UTC to 2026-03-02 00:00 UTC only, "
        "not 2026-02-16 00:00 UTC to 2026-03-02 00:00 UTC"
    ) in " ".join(out.split())  # wrapped between words at the width
