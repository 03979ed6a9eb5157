"""Input that is well-formed but absurd: a ``now`` far outside the history it is given with, an
infinite or years-long timeout, and names that would reorder or hide what a terminal shows.
Each is refused (or shown escaped) with a message that says why.
"""

from __future__ import annotations

import json
import math

import pytest
from pydantic import BaseModel, ValidationError

from bot.clock import MAX_NOW_AFTER_HISTORY_S
from bot.config.base import MAX_DURATION_S, ConfigModel
from bot.config.bot import BotSettings
from bot.config.errors import ConfigError
from bot.config.load import parse_model
from bot.config.recommend import RecommendSettings
from bot.config.repo import RepoConfig
from tests.conftest import PROJECT

EXAMPLE = PROJECT / "docs" / "examples" / "recommend-input.json"


@pytest.fixture
def with_now(tmp_path):
    """The documented example input with ``now`` replaced: its path."""

    def make(now: str):
        data = json.loads(EXAMPLE.read_text())
        data["now"] = now
        path = tmp_path / "input.json"
        path.write_text(json.dumps(data))
        return path

    return make


@pytest.mark.parametrize(
    ("now", "why"),
    [
        ("9999-12-31T00:00:00Z", "days after the history's last time (2023-11-14T23:45:00Z)"),
        ("1971-01-01T00:00:00Z", "is before the history's first time (2023-11-13T00:00:00Z)"),
    ],
)
def test_recommend_refuses_a_now_outside_the_history(cli, with_now, now, why):
    done = cli("recommend", "--input", str(with_now(now)), timeout=30)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "input.json: now: now (" in done.stderr and why in done.stderr
    assert "Traceback" not in done.stderr


def test_recommend_takes_a_now_shortly_after_the_history(cli, with_now):
    done = cli("recommend", "--input", str(with_now("2023-11-15T12:00:00Z")))
    assert done.returncode == 0, done.stderr
    assert "Deployment/shop/web@default" in done.stdout
    assert MAX_NOW_AFTER_HISTORY_S == 86_400  # documented in docs/quality.md


def test_a_snapshot_refuses_a_now_outside_its_history(cli):
    done = cli("plan", "--demo", "--now", "9999-01-01", timeout=30)
    assert done.returncode == 2
    assert "--now: now (9999-01-01T00:00:00Z) is" in done.stderr
    assert "days after the history's last time" in done.stderr


@pytest.mark.parametrize("value", ["1e309", ".inf", str(MAX_DURATION_S + 1)])
def test_a_timeout_must_be_finite_and_bounded(value):
    text = f"github:\n  retries: 1\n  timeout_s: {value}\n"
    with pytest.raises(ConfigError) as raised:
        parse_model(text, BotSettings, file="bot.yaml")
    assert "bot.yaml:3: github.timeout_s: Value error, a duration must be finite and at most" in (
        str(raised.value)
    )


def _durations(model: type[BaseModel], path: str = "") -> list[tuple[type[BaseModel], str]]:
    """Every ``*_s`` / ``*_days`` number of ``model`` and the models under it."""
    found = []
    for name, field in model.model_fields.items():
        kinds = [field.annotation, *getattr(field.annotation, "__args__", ())]
        for kind in kinds:
            if isinstance(kind, type) and issubclass(kind, ConfigModel):
                found += _durations(kind, f"{path}{name}.")
        if name.endswith(("_s", "_days")) and any(k in (int, float) for k in kinds):
            found.append((model, name))
    return found


@pytest.mark.parametrize("root", [BotSettings, RepoConfig, RecommendSettings])
def test_every_duration_setting_refuses_infinity(root):
    fields = _durations(root)
    assert len(fields) >= (10 if root is not RepoConfig else 0)
    for model, name in fields:
        kind = model.model_fields[name].annotation
        value = math.inf if float in (kind, *getattr(kind, "__args__", ())) else 10**12
        with pytest.raises(ValidationError) as raised:
            model.model_validate({name: value})
        assert [e["loc"] for e in raised.value.errors()] == [(name,)], (model, name)


def test_validate_shows_control_and_bidirectional_characters_escaped(cli, tmp_path):
    (tmp_path / "d.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\n"
        'metadata:\n  name: "web\\u202eevil"\n  namespace: shop\n'
        'spec:\n  template:\n    spec:\n      containers:\n        - name: "app\\x1b[31m"\n'
        "          resources:\n            requests: {cpu: 100m, memory: 1Gi}\n"
    )
    done = cli("validate", str(tmp_path))
    assert "Deployment/shop/web\\u202eevil@default" in done.stdout
    assert "app\\u001b[31m: requests" in done.stdout
    assert "\u202e" not in done.stdout and "\x1b" not in done.stdout
