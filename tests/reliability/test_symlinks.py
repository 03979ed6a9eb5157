"""Symlinks: an opt-in file that links outside the repository is refused, never read; a manifest
reached through a symlink inside the repository is one file, edited once at its target, and
the link stays a link (the pull request is opened, counted and kept up to date run after run).
"""

from __future__ import annotations

from pathlib import Path

from tests.reliability.hostile import (
    SIM_NOW,
    TOKEN,
    bot_config,
    deployment,
    serve_repositories,
    sim_repository,
    sim_settings,
    summary_lines,
)
from tests.support.github.gitrepo import Symlink


def test_an_opt_in_file_linking_outside_the_repository_is_refused(cli, tmp_path):
    secret = tmp_path / "outside" / "settings.yaml"
    secret.parent.mkdir()
    secret.write_text("update_mode: off\nsecret_marker: 42\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".tortoise-bot.yaml").symlink_to(secret)
    done = cli("validate", str(repo))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "symlink leads outside the repository; it is not read" in done.stdout
    assert "secret_marker" not in done.stdout + done.stderr  # never parsed, so never quoted


def test_a_symlinked_manifest_is_edited_once_at_its_target(cli, tmp_path):
    repo = tmp_path / "repo"
    (repo / "base").mkdir(parents=True)
    (repo / "apps").mkdir()
    (repo / "base" / "web.yaml").write_bytes(deployment("shop"))
    (repo / "apps" / "web.yaml").symlink_to(Path("..") / "base" / "web.yaml")
    listed = cli("validate", str(repo))
    assert listed.returncode == 0, listed.stdout  # one file, one workload: not "declared twice"
    assert listed.stdout.count("Deployment/shop/web") == 1
    done = cli(
        "set", "--repo", str(repo), "--write", "Deployment/shop/web", "web.requests.cpu=300m"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "cpu: 300m" in (repo / "base" / "web.yaml").read_text()
    assert (repo / "apps" / "web.yaml").is_symlink()
    assert (repo / "apps" / "web.yaml").readlink() == Path("..") / "base" / "web.yaml"


def test_run_proposes_through_a_symlinked_manifest_and_keeps_the_link(
    cli, tmp_path, github_emulator, sim_prometheus
):
    gh = github_emulator
    files = sim_repository("ns-0", tmp_path / "sim")
    del files["ns-0/svc-2.yaml"]  # one workload, one pull request
    files["shared/svc-0.yaml"] = files.pop("ns-0/svc-0.yaml")
    files["ns-0/svc-0.yaml"] = Symlink("../shared/svc-0.yaml")
    serve_repositories(gh, {"octo/linked": files})
    config = bot_config(
        tmp_path / "bot.yaml", sim_settings(sim_prometheus.url), gh.api_url, ("octo/linked",)
    )

    first = cli("run", "--config", str(config), "--now", SIM_NOW, env={"GITHUB_TOKEN": TOKEN})
    assert first.returncode == 0, first.stdout + first.stderr
    line = summary_lines(first.stdout)["octo/linked"]
    assert line.startswith("ok") and "opened 1," in line
    (pull,) = gh.pulls("octo/linked", state="open")
    assert pull.pull is not None
    bare = gh.repository("octo/linked").git
    head, base = pull.pull.head, pull.pull.base
    assert bare.read_file(head, "shared/svc-0.yaml") != bare.read_file(base, "shared/svc-0.yaml")
    assert bare.mode(head, "ns-0/svc-0.yaml") == "120000"  # still a link, to the same target
    assert bare.read_file(head, "ns-0/svc-0.yaml") == b"../shared/svc-0.yaml"

    gh.reset_calls()
    again = cli("run", "--config", str(config), "--now", SIM_NOW, env={"GITHUB_TOKEN": TOKEN})
    assert again.returncode == 0, again.stdout + again.stderr
    line = summary_lines(again.stdout)["octo/linked"]
    assert line.startswith("ok") and "opened 0, updated 0" in line
    assert gh.writes() == []  # nothing refused, nothing rewritten
    gh.assert_valid()
