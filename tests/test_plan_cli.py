"""plan, explain and snapshot through the console script."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import jsonschema  # type: ignore[import-untyped]
import pytest

from bot.cli import main
from tests.conftest import PROJECT

DEMO = PROJECT / "bot" / "demo"
PLAN_SCHEMA = json.loads((PROJECT / "docs" / "schemas" / "plan.schema.json").read_text())


@pytest.fixture
def demo_copy(tmp_path) -> Path:
    root = tmp_path / "shop"
    shutil.copytree(DEMO / "repo", root)
    return root


def _demo_args(root: Path) -> list[str]:
    return [
        "--repo",
        str(root),
        "--snapshot",
        str(DEMO / "snapshot.zip"),
        "--config",
        str(DEMO / "bot.yaml"),
    ]


def test_demo_prints_table_and_diff(cli):
    result = cli("plan", "--demo")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for name in ("frontend", "cart", "checkout", "redis"):
        assert name in out
    assert "--- a/apps/raw/frontend.yaml" in out and "+++ b/apps/raw/frontend.yaml" in out
    redis = out.split("redis: changes", 1)[1]
    assert re.search(r"last 8 days, replayed +current +proposed", redis)
    assert re.search(r"predicted OOM kills +2 +0\n", redis)
    assert re.search(r"monthly cost +\$[\d,.]+ +\$[\d,.]+ \([+-]\$", redis)
    assert "charts/checkout/values-prod.yaml" in out
    assert "\x1b[" not in out  # not a terminal: plain text


def test_demo_json_matches_the_published_schema(cli):
    result = cli("plan", "--demo", "--format", "json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    jsonschema.validate(doc, PLAN_SCHEMA)
    statuses = {w["name"]: w["status"] for w in doc["workloads"]}
    assert set(statuses) == {"frontend", "cart", "checkout", "redis", "reviews"}
    assert "changes" in statuses.values()
    redis = next(w for w in doc["workloads"] if w["name"] == "redis")
    memory = redis["containers"][0]["memory"]
    # OOM-killed as its working set grew in each life: the limit holds the growth until a
    # restart (oom.leak_cadence)
    assert memory["limit"]["proposed"] > memory["limit"]["current"]
    assert memory["limit"]["rule"] == "oom.leak_cadence"
    assert memory["vpa"]["confidence"] > 0
    assert doc["diff"].startswith("--- a/")
    # Each workload with changes carries its replay; the cost is the demo's prices times the
    # requests with replicas: (core-hours × 24 + GiB-hours × 3) / hours replayed.
    for workload in doc["workloads"]:
        replay = workload["replay"]
        assert (replay is not None) == (workload["status"] == "changes")
    frontend = next(w for w in doc["workloads"] if w["name"] == "frontend")["replay"]
    assert frontend["prices"] == {"core_month": 24.0, "gib_month": 3.0, "currency": "$"}
    for side in ("current", "proposed"):
        figures = frontend[side]
        hours = figures["window_s"] / 3600
        cost = (figures["core_hours"] * 24 + figures["gib_hours"] * 3) / hours
        assert figures["monthly_cost"] == pytest.approx(cost)
    assert frontend["proposed"]["monthly_cost"] < frontend["current"]["monthly_cost"]
    assert len(frontend["current"]["replicas"]["by_hour"]) == 168
    assert redis_oom(doc) == (2, 0)
    assert doc["written"] == []
    written = json.loads(cli("plan", "--demo", "--format", "json", "--write").stdout)
    jsonschema.validate(written, PLAN_SCHEMA)
    in_diff = [line[6:] for line in doc["diff"].splitlines() if line.startswith("+++ b/")]
    assert written["written"] == sorted(in_diff) and "apps/raw/redis.yaml" in in_diff


def redis_oom(doc: dict) -> tuple[int, int]:
    replay = next(w for w in doc["workloads"] if w["name"] == "redis")["replay"]
    return replay["current"]["memory"][0]["oom_kills"], replay["proposed"]["memory"][0]["oom_kills"]


def test_plan_from_a_snapshot_equals_the_demo(cli, demo_copy):
    demo = json.loads(cli("plan", "--demo", "--format", "json").stdout)
    mine = json.loads(cli("plan", *_demo_args(demo_copy), "--format", "json").stdout)
    assert mine["workloads"] == demo["workloads"]
    assert mine["diff"] == demo["diff"]


def test_write_applies_the_diff_and_a_second_plan_reads_it(cli, demo_copy):
    before = (demo_copy / "apps/raw/redis.yaml").read_text()
    written = cli("plan", *_demo_args(demo_copy), "--write")
    assert written.returncode == 0, written.stderr
    listed = written.stdout.split("\nwrote ", 1)[1].splitlines()
    assert listed[0].endswith("files:") and "  apps/raw/redis.yaml" in listed[1:]
    assert all((demo_copy / line.strip()).is_file() for line in listed[1:])
    after = (demo_copy / "apps/raw/redis.yaml").read_text()
    assert after != before
    assert "memory: 512Mi}" not in after.split("limits:")[1].split("\n")[0]
    replanned = json.loads(cli("plan", *_demo_args(demo_copy), "--format", "json").stdout)
    redis = next(w for w in replanned["workloads"] if w["name"] == "redis")
    assert redis["containers"][0]["memory"]["limit"]["current"] > 512 * 1024 * 1024


def test_markdown_format(cli):
    result = cli("plan", "--demo", "--format", "markdown")
    assert result.returncode == 0
    assert result.stdout.startswith("## tortoise-bot plan: demo-shop")
    assert "| workload | container |" in result.stdout and "```diff" in result.stdout
    assert "### Deployment/shop/frontend&#64;default: the last 8 days under this proposal" in (
        result.stdout
    )
    assert "| predicted OOM kills | 2 | 0 |" in result.stdout


def test_bad_opt_in_file_is_exit_2_with_every_problem(cli, demo_copy):
    (demo_copy / ".tortoise-bot.yaml").write_text(
        "update_mode: maybe\nworkloads:\n  - ignore: true\n"
    )
    result = cli("plan", *_demo_args(demo_copy))
    assert result.returncode == 2
    assert ".tortoise-bot.yaml:1: update_mode" in result.stderr
    assert ".tortoise-bot.yaml:3: workloads.0.match" in result.stderr


def test_missing_source_is_a_usage_error(cli, demo_copy):
    result = cli("plan", "--repo", str(demo_copy))
    assert result.returncode == 2
    assert "--prometheus URL or --snapshot FILE" in result.stderr


def test_corrupt_snapshot_fails_cleanly(cli, demo_copy, tmp_path):
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"not a zip")
    result = cli("plan", "--repo", str(demo_copy), "--snapshot", str(bad))
    assert result.returncode in (1, 2)
    assert "snapshot" in result.stderr and "Traceback" not in result.stderr


def test_explain_names_every_rule(cli, demo_copy):
    result = cli("explain", *_demo_args(demo_copy), "shop/redis")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("StatefulSet/shop/redis@default: changes")
    assert "[vertical.ideal]" in out and "confidence" in out and "inputs:" in out
    # The replay: current vs proposed, per container, and its cost at the demo's prices.
    assert "replay of the last 8 days, current → proposed" in out
    assert re.search(r"predicted OOM kills +2 → 0", out)
    assert re.search(
        r"redis: memory peak 512 MiB, headroom to the limit \(or request\) +0 % → \d+ %", out
    )
    assert "Monthly cost = requested cores with replicas × $24.00 per core-month" in out
    as_json = json.loads(cli("explain", *_demo_args(demo_copy), "redis", "--format", "json").stdout)
    assert as_json["name"] == "redis"
    assert as_json["replay"]["current"]["memory"][0]["oom_kills"] == 2


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [("nope", "matches no workload"), ("a/b/c/d", "expected kind/namespace/name")],
)
def test_explain_unknown_workload(cli, demo_copy, spec, fragment):
    result = cli("explain", *_demo_args(demo_copy), spec)
    assert result.returncode == 2 and fragment in result.stderr


def test_plans_after_write_continue_the_hpa_steps_then_propose_nothing_more(cli, demo_copy):
    # Applied, then planned again on the same history (docs/recommendations.md §6): the HPA
    # targets and maxReplicas cuts move in bounded steps, so the next plans continue them (the
    # steps' own rules, or the rule that reaches the value) until a fixed point. Each plan is
    # made with --write: its JSON is the plan of the files as they were, then applied.
    def plan_and_write() -> dict:
        done = cli("plan", *_demo_args(demo_copy), "--format", "json", "--write")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    first = plan_and_write()
    # reviews runs the values its merged pull request set (bot/demo/pulls.json): nothing new
    assert {w["name"]: w["status"] for w in first["workloads"]}.pop("reviews") == "no-change"
    assert {w["status"] for w in first["workloads"] if w["name"] != "reviews"} == {"changes"}
    steps = {"replay.target_step", "replay.max_replicas_step"}
    assert steps <= {v["rule"] for w in first["workloads"] for v in _hpa_values(w)}
    before = first
    for _ in range(6):  # the demo settles after 5 writes (frontend's app target last)
        again = plan_and_write()  # the plan of what the previous one wrote
        if all(w["status"] == "no-change" for w in again["workloads"]):
            assert again["diff"] == "" and again["written"] == []
            return
        # a rerun moves the HPA values the written plan stepped, and the requests of only the
        # containers whose target it moved (Tortoise rebalances on the target in force)
        stepped = _stepped(before)
        for w in again["workloads"]:
            moved = {
                c["name"]
                for c in w["containers"]
                for r in ("cpu", "memory")
                for part in ("request", "limit")
                if c[r][part]["proposed"] not in (None, c[r][part]["current"])
            }
            assert moved <= stepped.get(w["name"], set()), (w["name"], moved, stepped)
        before = again
        for w in again["workloads"]:
            for v in _hpa_values(w):
                if v["proposed"] != v["current"] and v["current"] is not None:
                    assert v["rule"] in steps | {
                        "tortoise.target.by_replay",
                        "tortoise.replicas.max_by_replay",
                        "tortoise.replicas.min_by_replay",
                    }, v
    raise AssertionError("the demo's HPA steps did not settle within 6 plans")


def _stepped(plan: dict) -> dict[str, set[str]]:
    """Per workload, the containers whose HPA target the plan moved (a pod-level target: every
    container): the next plan rebalances their requests on the target then in force."""
    out: dict[str, set[str]] = {}
    for w in plan["workloads"]:
        for t in (w.get("hpa") or {}).get("targets", []):
            if t["proposed"] != t["current"]:
                names = (
                    [t["container"]] if t.get("container") else [c["name"] for c in w["containers"]]
                )
                out.setdefault(w["name"], set()).update(names)
    return out


def _hpa_values(workload: dict) -> list[dict]:
    hpa = workload.get("hpa") or {}
    values = (hpa.get("min_replicas"), hpa.get("max_replicas"), *hpa.get("targets", []))
    return [v for v in values if v]


def test_plan_and_explain_select_workloads_by_glob(capsys):
    """``--namespace``, ``--workload``, ``--environment``: globs that all must match, the
    environment by its last path segments too; an unselected workload is never planned."""
    assert (
        main(["plan", "--demo", "--workload", "c*", "--environment", "prod", "--format", "json"])
        == 0
    )
    planned = json.loads(capsys.readouterr().out)
    assert [w["name"] for w in planned["workloads"]] == ["cart", "checkout"]
    assert main(["plan", "--demo", "--namespace", "other", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["workloads"] == []
    assert main(["explain", "--demo", "--workload", "redis", "frontend"]) == 2
    assert "matches no workload" in capsys.readouterr().err


def test_validate_takes_repo_as_every_command(capsys):
    from bot.commands.common import DEMO_DIR

    assert main(["validate", "--repo", str(DEMO_DIR / "repo")]) == 0
    by_option = capsys.readouterr().out
    assert main(["validate", str(DEMO_DIR / "repo")]) == 0  # the positional PATH still works
    assert capsys.readouterr().out == by_option and "cart" in by_option


def test_an_empty_plan_says_what_it_read(tmp_path, capsys):
    from bot.commands.common import DEMO_DIR

    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "settings.yaml").write_text("a: 1\n")
    snapshot = str(DEMO_DIR / "snapshot.zip")
    assert main(["plan", "--repo", str(tmp_path), "--snapshot", snapshot]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "no workloads found in 1 file (paths.include **/*.yaml, **/*.yml;" in out
    assert main(["plan", "--demo", "--namespace", "nope"]) == 0
    assert "no workload selected of the 5 found" in capsys.readouterr().out


SECOND_HPA = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: frontend-memory, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: frontend}
  maxReplicas: 8
  metrics:
    - type: Resource
      resource: {name: memory, target: {type: Utilization, averageUtilization: 80}}
"""


def test_two_hpas_on_one_workload_are_a_warning_and_neither_is_edited(cli, demo_copy):
    (demo_copy / "apps/raw/frontend-memory.yaml").write_text(SECOND_HPA)
    result = cli("plan", *_demo_args(demo_copy))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "warning: apps/raw/frontend.yaml:39: Deployment shop/frontend" in out, out
    assert "AmbiguousSelector" in out
    assert re.search(r"skipped +frontend", out)
    assert "+++ b/apps/raw/frontend.yaml" not in out and "frontend-memory.yaml\n" not in out
    assert "+++ b/apps/raw/redis.yaml" in out  # the other workloads go on


def _frontend_targets(cli, demo_copy, version: str | None) -> list[dict]:
    config = (DEMO / "repo" / ".tortoise-bot.yaml").read_text()
    if version is not None:
        config = config.replace(
            "selector: {cluster: demo}\n",
            f"selector: {{cluster: demo}}\n    kubernetes_version: '{version}'\n",
            1,
        )
    (demo_copy / ".tortoise-bot.yaml").write_text(config)
    result = cli("plan", *_demo_args(demo_copy), "--format", "json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    frontend = next(w for w in doc["workloads"] if w["name"] == "frontend")
    notes = [n["message"] for n in frontend.get("notes", [])]
    return [*frontend["hpa"]["targets"], {"notes": notes}]


def test_container_resource_metrics_are_proposed_only_from_kubernetes_1_27(cli, demo_copy):
    # The demo frontend's HPA scales on the pod-level CPU Resource metric: on 1.30 (and on an
    # unknown version) it is replaced by one ContainerResource metric per container; on 1.26
    # the pod-level target is tuned instead and a note says why.
    *new, _ = _frontend_targets(cli, demo_copy, "1.30")
    assert sorted(t["container"] for t in new) == ["app", "istio-proxy"]
    *unknown, _ = _frontend_targets(cli, demo_copy, None)
    assert unknown == new
    *old, notes = _frontend_targets(cli, demo_copy, "1.26")
    assert [t["container"] for t in old] == ["*"]
    assert "ContainerResource not expressible here" in old[0]["reason"]
    assert any("Kubernetes 1.26 serves no ContainerResource" in n for n in notes["notes"])
