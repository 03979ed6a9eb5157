"""``tortoise-bot plan`` with a forge repository named verifies its merged bot pull requests
read only (real Prometheus, the GitHub emulator): the JSON lists each verdict, the table and the
Markdown a short section, and the forge sees no write of any kind; without a forge the JSON
says why there are none."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import jsonschema  # type: ignore[import-untyped]
import pytest

from tests.forge.test_verification import NAMES, NOW, PROPOSED, prom
from tests.forge.test_verification_run import DEPLOYMENT, merged, ref
from tests.forge.verify_history import STEP_S
from tests.support.github.scenario import REPO
from tests.support.github.scenario import settings as fast_settings

__all__ = ["merged", "prom"]

PROJECT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((PROJECT / "docs" / "schemas" / "plan.schema.json").read_text())


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """The repository as merged: each workload at the CPU request its pull request set."""
    root = tmp_path / "checkout"
    (root / "apps").mkdir(parents=True)
    for name in NAMES:
        text = DEPLOYMENT.format(name=name).replace("cpu: 500m", f"cpu: {PROPOSED[name]}m")
        (root / "apps" / f"{name}.yaml").write_text(text)
    (root / ".tortoise-bot.yaml").write_text("update_mode: auto\n")
    return root


def _config(tmp_path: Path, gh, prom_url: str, **extra: object) -> Path:
    path = tmp_path / "bot.yaml"
    values = {
        "prometheus": {"url": prom_url, "gzip": False, "step_s": STEP_S},
        "github": fast_settings(gh).model_dump(mode="json"),
        **extra,
    }
    path.write_text(json.dumps(values))  # JSON is YAML
    return path


def _plan(cli, checkout: Path, config: Path, token: str, *args: str):
    now = datetime.fromtimestamp(NOW, UTC).isoformat()
    return cli(
        "plan", "--repo", str(checkout), "--config", str(config), "--now", now, *args,
        env={"GITHUB_TOKEN": token},
    )  # fmt: skip


def test_plan_verifies_the_merged_pull_requests_read_only(cli, merged, prom, checkout, tmp_path):
    gh, numbers = merged
    config = _config(tmp_path, gh, prom.url, repositories=[REPO])
    gh.reset_calls()
    result = _plan(cli, checkout, config, gh.token, "--format", "json")
    assert result.returncode in (0, 2), result.stderr
    assert gh.writes() == []  # read only: no comment, no revert, no label
    assert any("/pulls" in c.path for c in gh.reads())
    document = json.loads(result.stdout)
    jsonschema.validate(document, SCHEMA)
    verification = document["verification"]
    assert verification["available"] is True and verification["reason"] is None
    said = {
        w["workload"]: (p["number"], w["status"])
        for p in verification["pulls"]
        for w in p["workloads"]
    }
    assert said == {
        ref("web").key: (numbers["web"], "verified"),
        ref("api").key: (numbers["api"], "waiting"),
        ref("cart").key: (numbers["cart"], "regressed"),
        ref("pay").key: (numbers["pay"], "regressed"),
    }
    (pay,) = [p for p in verification["pulls"] if p["number"] == numbers["pay"]]
    assert pay["restore"] == {
        f"{ref('pay').key}/app/requests.cpu": {"merged": 0.1, "previous": 0.5}
    }
    (finding,) = pay["workloads"][0]["findings"]
    assert finding["kind"] == "cpu" and finding["observed"] == pytest.approx(1.0)

    gh.reset_calls()
    table = _plan(cli, checkout, config, gh.token)
    assert gh.writes() == []
    assert "verification: regressed 2, waiting 1, verified 1" in table.stdout
    assert f"#{numbers['pay']} {ref('pay').key}: regressed:" in table.stdout
    markdown = _plan(cli, checkout, config, gh.token, "--format", "markdown")
    assert "### Verification" in markdown.stdout and f"[#{numbers['cart']}](" in markdown.stdout
    assert gh.writes() == []


def test_plan_says_why_there_is_no_verification(cli, merged, prom, checkout, tmp_path):
    gh, _ = merged
    no_repo = _config(tmp_path, gh, prom.url)
    document = json.loads(_plan(cli, checkout, no_repo, gh.token, "--format", "json").stdout)
    jsonschema.validate(document, SCHEMA)
    assert document["verification"] == {
        "available": False,
        "reason": "no forge repository: pass --github-repo OWNER/NAME or list one in "
        "`repositories`",
        "pulls": [],
    }
    assert "verification" not in _plan(cli, checkout, no_repo, gh.token).stdout  # not asked
    named = _plan(cli, checkout, no_repo, "", "--format", "json", "--github-repo", REPO)
    reason = json.loads(named.stdout)["verification"]["reason"]
    assert reason == "GitHub credentials: GITHUB_TOKEN is not set"
    table = _plan(cli, checkout, no_repo, "", "--github-repo", REPO).stdout
    assert "verification: not available (GitHub credentials: GITHUB_TOKEN is not set)" in table
