"""Globs cannot hang the bot: matching never backtracks, globs are bounded in length and count.

``paths.include: ["**a**a**a**a**a**a**a**a**a**b"]`` against one 120-character file name ran
for more than a minute when globs were translated to backtracking regexes.
"""

from __future__ import annotations

import fnmatch
import random

import pytest

from bot.config.errors import ConfigError
from bot.config.load import parse_model
from bot.config.manifests import MAX_GLOB_CHARS, MAX_GLOBS
from bot.config.repo import RepoConfig
from bot.manifests.globs import match_name, match_path


def _reference(path: str, pattern: str) -> bool:
    """Segment-wise matching by exhaustive recursion with ``fnmatch`` per name (small inputs)."""

    def go(parts: list[str], segments: list[str]) -> bool:
        if not segments:
            return not parts
        if segments[0] == "**":
            return any(go(parts[i:], segments[1:]) for i in range(len(parts) + 1))
        if not parts:
            return False
        name_pattern = segments[0].replace("**", "*")
        return fnmatch.fnmatchcase(parts[0], name_pattern) and go(parts[1:], segments[1:])

    return go(path.split("/"), pattern.split("/"))


def test_matcher_agrees_with_exhaustive_matching_on_random_globs():
    rng = random.Random(15)
    pieces = ["a", "b", "ab", "*", "**", "?", "/", "**/", ".yaml"]
    checked = matched = 0
    for _ in range(4000):
        pattern = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 6)))
        path = "/".join(
            "".join(rng.choice("ab.") for _ in range(rng.randint(1, 4)))
            for _ in range(rng.randint(1, 3))
        )
        expected = _reference(path, pattern)
        assert match_path(path, pattern) == expected, (path, pattern)
        checked += 1
        matched += expected
    assert checked == 4000 and 200 < matched < 3800  # both outcomes well covered


@pytest.mark.parametrize(
    ("path", "pattern", "expected"),
    [
        ("apps/web/deploy.yaml", "**/*.yaml", True),
        ("deploy.yaml", "**/*.yaml", True),
        ("vendor/x/y.yaml", "vendor/**", True),
        ("apps/web/deploy.yaml", "apps/*.yaml", False),
        ("apps/web/deploy.yaml", "apps**", False),  # ** inside a name stays in the name
        ("apps-web.yaml", "apps**", True),
        ("a/b/c/d.yml", "a/**/d.y?l", True),
    ],
)
def test_glob_semantics(path, pattern, expected):
    assert match_path(path, pattern) is expected


def test_pathological_globs_are_answered_without_backtracking():
    name = "a" * 120
    for repeats in (5, 9, 40):
        pattern = "**a" * repeats + "**b"
        assert not match_path(name, pattern)
        assert not match_name(name, pattern)
    assert match_path("x/" * 60 + "y.yaml", "**/" * 60 + "*.yaml")
    assert not match_path("x/" * 200 + "y.yml", "**/" * 100 + "*.yaml")


def test_validate_on_a_pathological_glob_finishes(cli, tmp_path):
    """12 repeats: the regex translation needed hours on this file name; a subprocess bounds it."""
    (tmp_path / ".tortoise-bot.yaml").write_text(f'paths:\n  include: ["{"**a" * 12}**b"]\n')
    (tmp_path / ("a" * 120)).write_text("kind: ConfigMap\n")
    done = cli("validate", str(tmp_path), timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "environments: (none)" in done.stdout


def test_globs_are_bounded_in_length_and_count():
    too_long = "a" * (MAX_GLOB_CHARS + 1)
    with pytest.raises(ConfigError) as long_error:
        parse_model(f'paths:\n  include: ["{too_long}"]\n', RepoConfig, file=".tortoise-bot.yaml")
    assert f"glob longer than {MAX_GLOB_CHARS} characters" in str(long_error.value)
    many = ", ".join(f'"d{i}/*.yaml"' for i in range(MAX_GLOBS + 1))
    with pytest.raises(ConfigError) as many_error:
        parse_model(f"paths:\n  exclude: [{many}]\n", RepoConfig, file=".tortoise-bot.yaml")
    assert ".tortoise-bot.yaml:2: paths.exclude" in str(many_error.value)
    assert f"at most {MAX_GLOBS} items" in str(many_error.value)
