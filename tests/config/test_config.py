"""Config files: every problem reported at once with key and line; schemas in config/ are fresh."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import ConfigError, RepoConfig, load_repo_config
from bot.config.bot import BotSettings
from bot.config.load import parse_model
from bot.config.recommend import RecommendSettings, resolve
from bot.config.schema import SCHEMAS, schema_text

PROJECT = Path(__file__).resolve().parents[2]


def test_no_opt_in_file_gives_defaults(tmp_path):
    assert load_repo_config(tmp_path) == RepoConfig()


def test_opt_in_file_in_dot_github(tmp_path):
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github" / "tortoise-bot.yaml").write_text("update_mode: 'off'\n")
    assert load_repo_config(tmp_path).update_mode == "off"


def test_every_problem_at_once_with_key_and_line():
    text = "# comment\nupdate_mode: sometimes\npull_requests:\n  max_open: -1\n  colour: blue\n"
    with pytest.raises(ConfigError) as info:
        parse_model(text, RepoConfig, file=".tortoise-bot.yaml")
    found = {(p.key, p.line) for p in info.value.problems}
    assert found == {
        ("update_mode", 2),
        ("pull_requests.max_open", 4),
        ("pull_requests.colour", 5),
    }
    messages = {p.key: p.message for p in info.value.problems}
    assert "'off' or 'auto'" in messages["update_mode"]
    assert "greater than or equal to 0" in messages["pull_requests.max_open"]
    assert "unknown key" in messages["pull_requests.colour"]
    assert ".tortoise-bot.yaml:5" in str(info.value)


def _message(text: str, model=RepoConfig) -> str:
    with pytest.raises(ConfigError) as info:
        parse_model(text, model, file="f.yaml")
    (problem,) = info.value.problems
    return problem.message


def test_a_text_where_a_list_belongs_says_what_is_expected():
    message = _message("pull_requests:\n  labels: right-sizing\n")
    assert message == (
        "expected a list (a YAML sequence such as [right-sizing]), got the text 'right-sizing'"
    )
    assert "got the number 3" in _message("pull_requests:\n  labels: 3\n")
    assert _message("pull_requests: [a]\n").startswith("expected a mapping (key: value lines)")


def test_an_unknown_key_names_the_close_one_and_the_published_schema():
    repo = _message("pull_requests:\n  lables: [x]\n")
    assert repo == (
        "unknown key (did you mean 'labels'? every key: "
        "https://raw.githubusercontent.com/tortoise-bot/tortoise-bot/main/config/repo.schema.json)"
    )
    bot = _message("prometheus:\n  zzz: 1\n", BotSettings)
    assert bot.startswith("unknown key (check the spelling; every key: https://")
    assert bot.endswith("/config/bot.schema.json)")
    assert set(SCHEMAS) == {RepoConfig.SCHEMA_FILE, BotSettings.SCHEMA_FILE}


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("a: [1, 2\n", 2, "invalid YAML"),
        ("a: 1\na: 2\n", 2, "invalid YAML"),
        ("- 1\n- 2\n", 1, "expected a mapping"),
    ],
    ids=["unclosed-flow", "duplicate-key", "not-a-mapping"],
)
def test_yaml_problems_name_the_line(text, line, fragment):
    with pytest.raises(ConfigError) as info:
        parse_model(text, RepoConfig, file="f.yaml")
    (problem,) = info.value.problems
    assert problem.line == line
    assert fragment in problem.message


def test_resolve_applies_overrides_in_order():
    base = RecommendSettings()
    resolved = resolve(
        base, {"admin": {"minimum_min_replicas": 2}}, {"admin": {"maximum_min_replicas": 20}}
    )
    assert resolved.admin.minimum_min_replicas == 2
    assert resolved.admin.maximum_min_replicas == 20
    assert base.admin.minimum_min_replicas != 2  # input untouched


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_generated_schema_is_fresh(name):
    path = PROJECT / "config" / name
    assert path.exists(), f"run `tortoise-bot schema` to generate {path}"
    assert path.read_text() == schema_text(SCHEMAS[name]), (
        f"{path} is stale: run `tortoise-bot schema --out config`"
    )


@pytest.mark.parametrize(
    ("text", "key", "fragment"),
    [
        ("schedule:\n  cron: '0 6 * *'\n", "schedule.cron", "expected 5 crontab fields"),
        ("schedule:\n  timezone: Mars/Olympus\n", "schedule.timezone", "unknown IANA time zone"),
        ("schedule:\n  jitter_s: -5\n", "schedule.jitter_s", "greater than or equal to 0"),
    ],
    ids=["cron-fields", "time-zone", "jitter"],
)
def test_bad_schedule_is_reported(text, key, fragment):
    from bot.config.bot import BotSettings

    with pytest.raises(ConfigError) as info:
        parse_model(text, BotSettings, file="bot.yaml")
    (problem,) = info.value.problems
    assert problem.key == key and problem.line == 2
    assert fragment in problem.message


def test_configuration_reference_is_fresh():
    from bot.config.reference import refresh
    from bot.config.schema import DOC_TABLES

    doc = PROJECT / "docs" / "configuration.md"
    text = doc.read_text()
    assert text == refresh(text, DOC_TABLES), (
        "docs/configuration.md is stale: run `tortoise-bot schema`"
    )
    for key in ("`update_mode`", "`pull_requests.max_open`", "`schedule.timezone`"):
        assert key in text


def test_reference_rows_flatten_sections_and_lists():
    from bot.config.reference import rows

    keys = [r[0] for r in rows(RepoConfig)]
    assert "pull_requests.grouping" in keys
    assert "workloads[].match" in keys
    assert keys.index("workloads") < keys.index("workloads[].match")


def test_example_bot_settings_are_valid():
    from bot.config.bot import load_bot_settings

    settings = load_bot_settings(PROJECT / "config" / "bot.example.yaml")
    assert settings.repositories == ("acme/platform-deploys", "acme/payments-gitops")
    assert settings.github.app_id == 123456
    assert settings.schedule.timezone == "Europe/Berlin"


@pytest.mark.parametrize(
    ("window", "when", "inside"),
    [
        # office hours Mon-Fri 9-17 in Berlin (UTC+1 in November)
        (
            {
                "days": ["mon", "tue", "wed", "thu", "fri"],
                "start_hour": 9,
                "end_hour": 17,
                "timezone": "Europe/Berlin",
            },
            "2026-11-23T08:30:00+00:00",
            True,
        ),
        (
            {
                "days": ["mon", "tue", "wed", "thu", "fri"],
                "start_hour": 9,
                "end_hour": 17,
                "timezone": "Europe/Berlin",
            },
            "2026-11-23T07:30:00+00:00",
            False,
        ),
        (
            {
                "days": ["mon", "tue", "wed", "thu", "fri"],
                "start_hour": 9,
                "end_hour": 17,
                "timezone": "Europe/Berlin",
            },
            "2026-11-22T10:00:00+00:00",
            False,
        ),
        # overnight window opening Friday 22:00: Saturday 03:00 belongs to Friday's window
        ({"days": ["fri"], "start_hour": 22, "end_hour": 6}, "2026-11-28T03:00:00+00:00", True),
        ({"days": ["fri"], "start_hour": 22, "end_hour": 6}, "2026-11-27T03:00:00+00:00", False),
        ({"days": ["fri"], "start_hour": 22, "end_hour": 6}, "2026-11-27T23:00:00+00:00", True),
    ],
    ids=[
        "office-hours-in",
        "before-office",
        "sunday",
        "overnight-saturday-morning",
        "friday-morning",
        "friday-night",
    ],
)
def test_schedule_window(window, when, inside):
    from datetime import datetime

    from bot.config.forge import ScheduleWindow

    assert (
        ScheduleWindow.model_validate(window).contains(datetime.fromisoformat(when).timestamp())
        is inside
    )


def test_schedule_window_rejects_unknown_day_and_zone():
    with pytest.raises(ConfigError) as info:
        parse_model(
            "pull_requests:\n  schedule:\n    days: [moon]\n    timezone: Nowhere/Land\n",
            RepoConfig,
            file="f",
        )
    keys = {p.key for p in info.value.problems}
    assert keys == {"pull_requests.schedule.days.0", "pull_requests.schedule.timezone"}
