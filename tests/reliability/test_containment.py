"""One repository never stops the others: a hostile label name is refused by ``validate`` with
its file and line, and any exception in ``run`` fails only the repository it came from (on its
dashboard and in the summary), while the repositories after it are served; exit code 1.
"""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import PROJECT
from tests.metrics.faults import Reply, error_body
from tests.reliability.hostile import (
    TOKEN,
    bot_config,
    fake_prometheus,
    repo_files,
    serve_repositories,
    summary_lines,
)

HOSTILE_LABEL = b"""environments:
  - name: prod
    path: .
    selector:
      'a"} or vector(1) #': x
"""


def test_validate_refuses_a_label_name_prometheus_cannot_hold(cli, tmp_path):
    (tmp_path / ".tortoise-bot.yaml").write_bytes(HOSTILE_LABEL)
    done = cli("validate", str(tmp_path))
    assert done.returncode == 2, done.stdout + done.stderr
    assert ".tortoise-bot.yaml:5: environments.0.selector." in done.stdout
    assert "is not a Prometheus label name" in done.stdout


def test_paths_leading_outside_the_repository_are_named(cli, tmp_path):
    (tmp_path / ".tortoise-bot.yaml").write_bytes(
        b'paths:\n  include: ["../../etc/*.yaml", "/etc/*.yaml", "./apps/**"]\n'
        b"environments:\n  - name: prod\n    path: ../../prod\n  - name: /srv/prod\n"
    )
    done = cli("validate", str(tmp_path))
    assert done.returncode == 2
    out = done.stdout
    assert (
        ".tortoise-bot.yaml:2: paths.include.0: Value error, '../../etc/*.yaml' leads outside "
        "the repository" in out
    )
    assert ".tortoise-bot.yaml:2: paths.include.1: Value error, '/etc/*.yaml' is an absolute" in out
    assert "paths.include.2" not in out  # ./ is the repository itself
    assert ".tortoise-bot.yaml:5: environments.0.path" in out
    assert "'/srv/prod' is an absolute path" in out


def _run_injected(namespace: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GITHUB_TOKEN": TOKEN, "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "tests.reliability.inject", namespace, *args],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_any_exception_fails_its_repository_only(tmp_path, github_emulator):
    gh = github_emulator
    names = ("octo/first", "octo/boom", "octo/last")
    serve_repositories(gh, {name: repo_files(name.split("/")[1]) for name in names})
    with fake_prometheus() as prom:
        config = bot_config(tmp_path / "bot.yaml", {"url": prom.url}, gh.api_url, names)
        done = _run_injected("boom", "run", "--config", str(config))
    assert done.returncode == 1, done.stdout + done.stderr
    lines = summary_lines(done.stdout)
    assert lines["octo/first"].startswith("ok"), done.stdout
    assert lines["octo/last"].startswith("ok"), done.stdout
    assert lines["octo/boom"].startswith("FAILED")
    assert "internal error (ValueError: planted bug for namespace boom)" in lines["octo/boom"]
    assert "Traceback" in done.stderr  # the bug's traceback is in the log, for the report
    (dashboard,) = gh.issues("octo/boom")
    assert "could not serve this repository" in (dashboard.body or "")
    assert "planted bug for namespace boom" in (dashboard.body or "")
    for served in ("octo/first", "octo/last"):
        (dashboard,) = gh.issues(served)
        assert "web" in (dashboard.body or "")
    gh.assert_valid()


def test_run_fails_when_every_query_fails(cli, tmp_path, github_emulator):
    gh = github_emulator
    serve_repositories(gh, {"octo/shop": repo_files("shop")})
    refused = Reply(400, error_body("bad_data", "refused"), {"Content-Type": "application/json"})
    with fake_prometheus(lambda seen: refused) as prom:
        config = bot_config(tmp_path / "bot.yaml", {"url": prom.url}, gh.api_url, ("octo/shop",))
        done = cli("run", "--config", str(config), env={"GITHUB_TOKEN": TOKEN})
    assert done.returncode == 1, done.stdout + done.stderr
    line = summary_lines(done.stdout)["octo/shop"]
    assert line.startswith("FAILED") and "1 workload(s) failed" in line
    (dashboard,) = gh.issues("octo/shop")
    assert r"metrics\: bad\_data\: refused" in (dashboard.body or "")


CRASH_MARKER = "# crash the reader here"
"""A comment the planted fault (``inject --segfault``) crashes the YAML composer on."""


def test_a_reader_killed_by_a_signal_fails_its_repository_only(tmp_path, github_emulator):
    gh = github_emulator
    names = ("octo/first", "octo/segv", "octo/last")
    repos = {name: repo_files(name.split("/")[1]) for name in names}
    repos["octo/segv"]["crash.yaml"] = f"{CRASH_MARKER}\na: 1\n".encode()
    serve_repositories(gh, repos)
    with fake_prometheus() as prom:
        config = bot_config(tmp_path / "bot.yaml", {"url": prom.url}, gh.api_url, names)
        done = _run_injected("--segfault", CRASH_MARKER, "run", "--config", str(config))
    assert done.returncode == 1, done.stdout + done.stderr
    lines = summary_lines(done.stdout)
    assert lines["octo/first"].startswith("ok"), done.stdout
    assert lines["octo/last"].startswith("ok"), done.stdout
    assert lines["octo/segv"].startswith("FAILED"), done.stdout
    assert "crashed the process that read them (SIGSEGV)" in lines["octo/segv"]
    (dashboard,) = gh.issues("octo/segv")
    assert "crashed the process that read them" in (dashboard.body or "")
    gh.assert_valid()
