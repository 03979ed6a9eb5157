"""Documents nested far deeper than any real one: every reader refuses them with the file and
line, before a parser or recursive code sees them (``bot.nesting``), so none can crash the
process (a C stack overflow once ended ``validate`` with SIGSEGV) or end in a traceback; in a
run the repository that holds one gets a finding and the others are served.
"""

from __future__ import annotations

import json
import zipfile

import pytest

from bot.forge.errors import ForgeError
from bot.forge.github.api import translated
from bot.metrics.client import PrometheusClient
from bot.metrics.errors import QueryError
from bot.nesting import MAX_NESTING, NestingError, check_json, check_yaml
from bot.report.proposal import STATE_MARKER, parse_state
from tests.conftest import PROJECT
from tests.reliability.hostile import (
    TOKEN,
    bot_config,
    deployment,
    fake_prometheus,
    repo_files,
    serve_repositories,
    summary_lines,
)


def flow(depth: int) -> str:
    """``a: [[[…]]]`` nested ``depth`` levels below the top mapping."""
    return "a: " + "[" * depth + "]" * depth + "\n"


def block(depth: int) -> str:
    """A block mapping nested ``depth`` levels, one indentation step per level."""
    return "".join(f"{'  ' * level}k{level}:\n" for level in range(depth - 1)) + (
        "  " * (depth - 1) + "leaf: 1\n"
    )


def no_crash(done, *, codes: tuple[int, ...] = (2,)) -> None:
    """No crash: a clear error with the exit status of whose problem it is (a manifest's: a
    finding, exit 0; the opt-in file, the bot settings, an input file: exit 2)."""
    assert done.returncode in codes, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr


@pytest.mark.parametrize("depth", [MAX_NESTING + 1, 3_000, 30_000])
def test_validate_names_a_manifest_nested_too_deeply(cli, tmp_path, depth):
    (tmp_path / "deep.yaml").write_text(flow(depth))
    (tmp_path / "deploy.yaml").write_bytes(deployment("shop"))
    done = cli("validate", str(tmp_path))
    no_crash(done, codes=(0,))
    assert "warning: deep.yaml:1: nested too deeply (more than 100 levels)" in done.stdout
    assert "Deployment/shop/web" in done.stdout  # the other files are read


def test_one_deep_document_does_not_hide_the_others(cli, tmp_path):
    (tmp_path / "all.yaml").write_bytes(
        deployment("shop", "web")
        + b"---\n"
        + block(MAX_NESTING + 5).encode()
        + b"---\n"
        + deployment("shop", "api")
    )
    done = cli("validate", str(tmp_path))
    no_crash(done, codes=(0,))
    assert "Deployment/shop/web@default" in done.stdout
    assert "Deployment/shop/api@default" in done.stdout
    line = 18 + MAX_NESTING  # the document starts on line 19 (level 1); level 101 opens on 118
    assert f"warning: all.yaml:{line}: nested too deeply" in done.stdout, done.stdout


def test_an_alias_inside_its_own_anchor_is_refused(cli, tmp_path):
    (tmp_path / "loop.yaml").write_text("x: 1\nloop: &a\n  - *a\n")
    done = cli("validate", str(tmp_path))
    no_crash(done, codes=(0,))
    assert "warning: loop.yaml:2: an alias refers to a collection that contains it" in done.stdout


def test_a_deep_opt_in_file_is_a_configuration_error(cli, tmp_path):
    (tmp_path / ".tortoise-bot.yaml").write_text("update_mode: auto\n" + flow(3_000))
    done = cli("validate", str(tmp_path))
    no_crash(done)
    assert ".tortoise-bot.yaml:2: <root>: nested too deeply (more than 100 levels)" in done.stdout


def test_a_deep_bot_configuration_is_a_configuration_error(cli, tmp_path):
    (tmp_path / "bot.yaml").write_text("repositories: [octo/shop]\n" + flow(30_000))
    done = cli("run", "--config", str(tmp_path / "bot.yaml"), env={"GITHUB_TOKEN": TOKEN})
    no_crash(done)
    assert (
        "bot.yaml:2: <root>: nested too deeply (more than 100 levels)" in done.stdout + done.stderr
    )


def test_deep_recommend_input_is_a_usage_error(cli, tmp_path):
    (tmp_path / "in.json").write_text('{"now": 0,\n"x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    done = cli("recommend", "--input", str(tmp_path / "in.json"))
    assert done.returncode == 2, done.stderr
    assert "in.json:2: nested too deeply (more than 100 levels)" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_deep_snapshot_is_refused_as_corrupt(cli, tmp_path):
    source = PROJECT / "bot" / "demo" / "snapshot.zip"
    target = tmp_path / "deep.zip"
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for item in old.infolist():
            data = old.read(item)
            if item.filename == "meta.json":
                deep = ', "x": ' + "[" * 50_000 + "]" * 50_000 + "}"
                data = (json.dumps(json.loads(data))[:-1] + deep).encode()
            new.writestr(item, data)
    repo = PROJECT / "bot" / "demo" / "repo"
    done = cli("plan", "--repo", str(repo), "--snapshot", str(target))
    no_crash(done)
    assert "corrupt snapshot: nested too deeply (more than 100 levels)" in done.stderr


def test_a_deep_manifest_fails_nothing_but_its_file_in_a_run(cli, tmp_path, github_emulator):
    gh = github_emulator
    names = ("octo/deep", "octo/other")
    repos = {name: repo_files(name.split("/")[1]) for name in names}
    repos["octo/deep"]["deep.yaml"] = flow(30_000).encode()
    serve_repositories(gh, repos)
    with fake_prometheus() as prom:
        config = bot_config(tmp_path / "bot.yaml", {"url": prom.url}, gh.api_url, names)
        done = cli("run", "--config", str(config), env={"GITHUB_TOKEN": TOKEN})
    assert done.returncode in (0, 1), done.stdout + done.stderr
    lines = summary_lines(done.stdout)
    assert lines["octo/other"].startswith("ok"), done.stdout
    assert "octo/deep" in lines, done.stdout
    assert "1 file problem(s): deep.yaml:1: nested too deeply" in lines["octo/deep"]
    gh.assert_valid()


@pytest.mark.parametrize("depth", [MAX_NESTING, MAX_NESTING + 1])
@pytest.mark.parametrize("shape", [flow, block])
def test_the_limit_is_exact_for_flow_and_block_yaml(shape, depth):
    text = shape(depth - 1 if shape is flow else depth)  # flow: the top mapping is a level
    if depth <= MAX_NESTING:
        check_yaml(text)
    else:
        with pytest.raises(NestingError):
            check_yaml(text)


def test_brackets_in_strings_and_comments_do_not_count():
    check_yaml('a: "' + "[" * 500 + '"\n# ' + "{" * 500 + "\nb: '" + "[" * 500 + "'\n")
    check_json('{"a": "' + "[" * 500 + '\\"' + "{" * 500 + '"}')
    with pytest.raises(NestingError) as raised:
        check_json('{"a": "]]]]\\"]]]",\n"b": ' + "[" * (MAX_NESTING + 1) + "]" * 200 + "}")
    assert raised.value.line == 2


def test_a_deep_state_in_a_pull_request_body_is_ignored():
    body = f"text\n<!-- {STATE_MARKER}: " + "[" * 100_000 + "]" * 100_000 + " -->\n"
    assert parse_state(body) is None


def test_a_deep_github_answer_is_a_failed_request():
    with pytest.raises(ForgeError, match="nested too deeply"), translated("octo/shop", "read"):
        json.loads("[" * 100_000 + "]" * 100_000)  # as PyGithub decodes an answer


def test_a_deep_prometheus_answer_is_not_an_answer():
    """orjson, which decodes Prometheus answers, refuses deep documents itself."""
    deep = b'{"status":"success","data":' + b"[" * 5_000 + b"]" * 5_000 + b"}"
    with pytest.raises(QueryError, match="not a JSON answer"):
        PrometheusClient._decode(deep, 200, query="up", url="http://127.0.0.1")
