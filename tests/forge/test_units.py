"""Pure parts of the forge: branch names, grouping, credentials, git errors without secrets."""

from __future__ import annotations

import subprocess

import pytest
from github import Auth

from bot.config.forge import GitHubConfig
from bot.forge.branches import branch_name, group_change_sets, group_key, is_bot_branch
from bot.forge.errors import AuthError, GitError
from bot.forge.git import Git
from bot.forge.github.auth import (
    AppCredentials,
    InstallationAuth,
    RepositoryAuth,
    TokenCredentials,
    credentials_from_env,
)
from bot.model import ChangeSet, FieldChange, FieldId, WorkloadRef

REF = WorkloadRef("Deployment", "shop", "frontend", "prod")


@pytest.mark.parametrize(
    ("grouping", "key"),
    [
        ("workload", "prod/shop/frontend"),
        ("namespace", "prod/shop"),
        ("environment", "prod"),
        ("repository", "all"),
    ],
    ids=["workload", "namespace", "environment", "repository"],
)
def test_group_key(grouping, key):
    assert group_key(REF, grouping) == key


@pytest.mark.parametrize(
    ("key", "template", "expected"),
    [
        ("prod/shop/frontend", "{prefix}/{key}", "tortoise-bot/prod/shop/frontend"),
        ("prod/shop/web app~1^:?*[", "{prefix}/{key}", "tortoise-bot/prod/shop/web-app-1"),
        ("prod/../x.lock", "{prefix}/{key}", "tortoise-bot/prod/_/x"),
        ("all", "bots/{prefix}-{key}", "bots/tortoise-bot-all"),
    ],
    ids=["default", "unsafe-characters", "dots-and-lock", "custom-template"],
)
def test_branch_name_is_a_valid_ref(key, template, expected):
    name = branch_name(key, template=template)
    assert name == expected
    assert (
        subprocess.run(["git", "check-ref-format", f"refs/heads/{name}"], check=False).returncode
        == 0
    )


def test_group_change_sets_merges_per_namespace_in_order():
    other = WorkloadRef("Deployment", "shop", "api", "prod")
    elsewhere = WorkloadRef("Deployment", "pay", "api", "prod")
    sets = [
        ChangeSet("a", (FieldChange(REF, FieldId.REQUESTS_CPU, 1.0),)),
        ChangeSet("b", (FieldChange(elsewhere, FieldId.REQUESTS_CPU, 2.0),)),
        ChangeSet("c", (FieldChange(other, FieldId.REQUESTS_CPU, 3.0),)),
    ]
    grouped = group_change_sets(sets, "namespace")
    assert [(g.key, [c.proposed for c in g.changes]) for g in grouped] == [
        ("prod/shop", [1.0, 3.0]),
        ("prod/pay", [2.0]),
    ]


def test_credentials_from_env():
    config = GitHubConfig()
    assert credentials_from_env(config, {"GITHUB_TOKEN": " ghp_x \n"}) == TokenCredentials("ghp_x")
    with pytest.raises(AuthError, match="GITHUB_TOKEN is not set"):
        credentials_from_env(config, {})
    app = GitHubConfig(app_id=7, installation_id=9)
    pem = "-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----\n"
    assert credentials_from_env(app, {"TORTOISE_BOT_APP_PRIVATE_KEY": pem}) == AppCredentials(
        7, pem, 9
    )
    with pytest.raises(AuthError, match="no PEM"):
        credentials_from_env(app, {"TORTOISE_BOT_APP_PRIVATE_KEY": "ghp_x"})
    assert "ghp_secret" not in repr(TokenCredentials("ghp_secret"))
    assert "abc" not in repr(AppCredentials(7, pem))


def test_git_errors_never_show_the_token(tmp_path):
    token = "ghp_s3cret_value"
    git = Git(
        f"http://x-access-token:{token}@127.0.0.1:9/octo/shop.git",
        lambda: token,
        repo="octo/shop",
        timeout_s=10,
    )
    with pytest.raises(GitError) as err:
        git.clone(tmp_path / "c", "main")
    text = f"{err.value} {err.value.cmd} {err.value.stderr}"
    assert token not in text and "***" in text
    assert err.value.returncode != 0 and err.value.repo == "octo/shop"


@pytest.mark.parametrize(
    ("template", "name", "expected"),
    [
        ("{prefix}/{key}", "tortoise-bot/prod/shop/web", True),
        ("{prefix}/{key}", "tortoise-bot/", False),
        ("{prefix}/{key}", "feature/x", False),
        ("{prefix}-{key}", "tortoise-bot-prod/x", True),
        ("bots/{key}/{prefix}", "bots/prod/x/tortoise-bot", True),
        ("bots/{key}/{prefix}", "bots/prod/x", False),
    ],
    ids=["default", "empty-key", "other", "dash", "suffix", "suffix-missing"],
)
def test_is_bot_branch(template, name, expected):
    assert is_bot_branch(name, template=template) is expected


def test_only_an_installation_token_can_be_renewed():
    fixed = RepositoryAuth(Auth.Token("ghp_fixed"))
    assert fixed.renew() is False and fixed.token == "ghp_fixed"
    tokens = iter(["ghs_first", "ghs_second"])
    made = []

    class Installation:
        def __init__(self) -> None:
            self.token = next(tokens)
            made.append(self.token)

    renewable = RepositoryAuth(InstallationAuth(Installation))  # type: ignore[arg-type]
    assert renewable.token == "ghs_first"
    assert renewable.renew() is True and renewable.token == "ghs_second"
    assert made == ["ghs_first", "ghs_second"] and renewable.renewals == 1
