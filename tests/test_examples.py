"""Every command line the repository's examples contain goes through the real parser.

Sources: the Kubernetes examples (``config/deploy/**``, container ``args`` after the image's
entry point, or ``sh -c`` scripts run by ``sh``), the Dockerfile's default command, the
composite action's run script (executed by ``bash`` with the inputs of the example workflow,
``tortoise-bot`` being a recorder on the PATH), and every line of a fenced code block in the
documentation that calls ``tortoise-bot``.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from bot.cli import build_parser
from bot.sharding import Shard
from tests.conftest import PROJECT

DOCS = sorted(
    [PROJECT / "README.md", *(PROJECT / "docs").rglob("*.md"), *PROJECT.glob("*/README.md")]
)
WORKFLOW = PROJECT / "config" / "github-actions" / "tortoise-bot.yml"
PROGRAMS = ("tortoise-bot", ".venv/bin/tortoise-bot", "python -m bot", ".venv/bin/python -m bot")


def parse(argv: list[str]) -> argparse.Namespace:
    """``argv`` through the real parser; argparse's exit (code 2) becomes a test failure."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        pytest.fail(f"tortoise-bot {shlex.join(argv)}: the parser refused it (exit {exc.code})")
    if getattr(args, "shard", None):
        Shard.parse(args.shard)  # what `run` does with it
    return args


def _recorder(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """A ``tortoise-bot`` on the PATH that records its argv and working directory."""
    bin_dir, log = tmp_path / "bin", tmp_path / "calls.jsonl"
    bin_dir.mkdir(parents=True)
    exe = bin_dir / "tortoise-bot"
    exe.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        f"with open({str(log)!r}, 'a') as out:\n"
        "    out.write(json.dumps({'argv': sys.argv[1:], 'cwd': os.getcwd()}) + '\\n')\n"
    )
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return {"PATH": f"{bin_dir}:/usr/bin:/bin"}, log


def _calls(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


# --------------------------------------------------------------------------- Kubernetes


WORKLOAD_KINDS = ("Deployment", "CronJob", "Job")
"""The kinds of the examples that run the bot (the others: namespace, settings, kustomizations)."""


def _containers() -> Iterator[tuple[str, dict[str, Any]]]:
    for path in sorted((PROJECT / "config" / "deploy").rglob("*.yaml")):
        for doc in YAML(typ="safe").load_all(path.read_text()):
            if not isinstance(doc, dict) or doc.get("kind") not in WORKLOAD_KINDS:
                continue
            spec = doc["spec"]
            pod = (spec.get("jobTemplate", {}).get("spec", spec))["template"]["spec"]
            for container in pod.get("containers", []):
                yield f"{path.relative_to(PROJECT)}:{container['name']}", container


CONTAINERS = list(_containers())


def test_every_kubernetes_example_runs_the_bot():
    assert len(CONTAINERS) == 3
    # the name config/deploy/image resolves to the image and its version (test_deploy_examples)
    assert all(c["image"] == "tortoise-bot" for _, c in CONTAINERS)


@pytest.mark.parametrize("container", [c for _, c in CONTAINERS], ids=[n for n, _ in CONTAINERS])
def test_kubernetes_command_lines_parse(container, tmp_path):
    if "command" not in container:  # args after the image's ENTRYPOINT ["tortoise-bot"]
        parse([str(a) for a in container["args"]])
        return
    command = [str(c) for c in container["command"]]
    assert command[:2] == ["sh", "-c"], command
    env, log = _recorder(tmp_path)
    for index in ("0", "3"):  # what an Indexed Job sets
        subprocess.run(
            command, env={**env, "JOB_COMPLETION_INDEX": index}, check=True, cwd=tmp_path
        )
    calls = _calls(log)
    assert len(calls) == 2
    for call in calls:
        parse(call["argv"])
    assert {str(parse(c["argv"]).shard) for c in calls} == {"0/4", "3/4"}


def test_dockerfile_default_command_parses():
    text = (PROJECT / "Dockerfile").read_text()
    entry = re.search(r"^ENTRYPOINT (\[.*\])$", text, re.M)
    cmd = re.search(r"^CMD (\[.*\])$", text, re.M)
    assert entry and cmd
    assert json.loads(entry.group(1)) == ["tortoise-bot"]
    parse(json.loads(cmd.group(1)))


# --------------------------------------------------------------------------- GitHub Actions


def _action_step() -> dict[str, Any]:
    action = YAML(typ="safe").load((PROJECT / "action.yml").read_text())
    step: dict[str, Any] = next(s for s in action["runs"]["steps"] if s.get("id") == "run")
    step["defaults"] = {k: str(v.get("default", "")) for k, v in action["inputs"].items()}
    return step


def _run_action(inputs: dict[str, str], workspace: Path, tmp_path: Path) -> list[dict[str, Any]]:
    """The action's ``run`` step executed by bash, as the runner would, with ``inputs``."""
    step = _action_step()
    values = {**step["defaults"], **inputs}
    env, log = _recorder(tmp_path)
    for name, expression in step["env"].items():
        found = re.fullmatch(r"\$\{\{ inputs\.([a-z0-9-]+) \}\}", str(expression))
        assert found, f"action env {name}: {expression}"
        env[name] = values[found.group(1)]
    env["GITHUB_OUTPUT"] = str(tmp_path / "output")
    assert step["working-directory"] == "${{ github.workspace }}"
    done = subprocess.run(
        ["bash", "-e", "-c", str(step["run"])], env=env, cwd=workspace, check=False
    )
    assert done.returncode == 0
    assert (tmp_path / "output").read_text() == "exit-code=0\n"
    return _calls(log)


def _workflow_inputs() -> Iterator[tuple[str, dict[str, str]]]:
    """The example workflow's ``with:`` for each matrix entry and dry-run choice."""
    workflow = YAML(typ="safe").load(WORKFLOW.read_text())
    job = workflow["jobs"]["right-size"]
    step = next(s for s in job["steps"] if str(s.get("uses", "")).startswith("tortoise-bot/"))
    for shard in job["strategy"]["matrix"]["shard"]:
        for dry_run in ("true", "false"):
            values = {}
            for key, value in step["with"].items():
                text = str(value).replace("${{ matrix.shard }}", str(shard))
                if key == "dry-run":
                    text = dry_run
                values[key] = re.sub(r"\$\{\{.*?\}\}", "x", text)
            yield f"shard{shard}-dry{dry_run}", values


def test_example_workflow_runs_the_action_with_a_valid_command_line(tmp_path):
    comment = re.search(
        r"settings live in (\S+) at the root of that repository", WORKFLOW.read_text()
    )
    assert comment, "the example workflow says where its settings live"
    settings = comment.group(1)
    workspace = tmp_path / "ops-repository"
    (workspace / ".github" / "workflows").mkdir(parents=True)
    (workspace / settings).write_text("repositories: []\n")
    seen = []
    for name, inputs in _workflow_inputs():
        assert inputs["config"] == settings, "the comment and `config:` agree"
        (call,) = _run_action(inputs, workspace, tmp_path / name)
        args = parse(call["argv"])
        assert args.command == "run"
        assert (Path(str(call["cwd"])) / args.config).is_file()
        seen.append((args.shard, args.dry_run))
    assert sorted(seen) == [("0/2", False), ("0/2", True), ("1/2", False), ("1/2", True)]


def test_action_defaults_give_a_valid_command_line(tmp_path):
    workspace = tmp_path / "repo"
    workspace.mkdir()
    (call,) = _run_action({}, workspace, tmp_path / "defaults")
    args = parse(call["argv"])
    assert (args.command, args.shard, args.dry_run) == ("run", None, False)


# --------------------------------------------------------------------------- documentation


def doc_command_lines() -> list[tuple[str, list[str]]]:
    """``(file:line, argv)`` of every fenced-code line that calls ``tortoise-bot``."""
    out = []
    for path in DOCS:
        fenced = False
        lines = path.read_text().splitlines()
        number = 0
        while number < len(lines):
            line = lines[number].strip()
            number += 1
            if line.startswith("```"):
                fenced = not fenced
                continue
            if not fenced:
                continue
            start = number
            while line.endswith("\\") and number < len(lines):
                line = line[:-1] + " " + lines[number].strip()
                number += 1
            line = line.removeprefix("$ ")
            program = next((p for p in PROGRAMS if line.startswith(p + " ")), None)
            if program is None:
                continue
            argv = shlex.split(line[len(program) :], comments=True)
            out.append((f"{path.relative_to(PROJECT)}:{start}", argv))
    return out


DOC_LINES = doc_command_lines()


def test_documentation_has_command_lines():
    files = {where.split(":")[0] for where, _ in DOC_LINES}
    assert "README.md" in files and "docs/manifests.md" in files


@pytest.mark.parametrize("argv", [a for _, a in DOC_LINES], ids=[w for w, _ in DOC_LINES])
def test_documented_command_lines_parse(argv):
    parse(argv)


def test_the_parser_check_would_catch_a_bad_example():
    with pytest.raises(pytest.fail.Exception, match="refused"):
        parse(["serve", "--health-hots", "0.0.0.0"])


def test_global_options_before_or_after_the_command():
    before = parse(["--log-format", "json", "--color", "never", "run", "--dry-run"])
    after = parse(["run", "--dry-run", "--log-format", "json", "--color", "never"])
    for args in (before, after):
        assert (args.log_format, args.color, args.log_level) == ("json", "never", "WARNING")
    both = parse(["--log-level", "debug", "plan", "--demo", "--log-level", "error"])
    assert both.log_level == "ERROR"
    kept = parse(["--log-level", "info", "plan", "--demo"])
    assert kept.log_level == "INFO"


def test_a_misspelt_option_shows_the_command_usage(cli):
    result = cli("plan", "--demo", "--formt", "json")
    assert result.returncode == 2
    assert result.stderr.startswith("usage: tortoise-bot plan ")
    assert "unrecognized arguments: --formt json (did you mean --format?)" in result.stderr


def test_serve_example_accepts_log_format_after_the_command(cli):
    result = cli("serve", "--health-host", "0.0.0.0", "--log-format", "json", "--help")
    assert result.returncode == 0 and "--log-format" in result.stdout
