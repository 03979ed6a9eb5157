"""A GitHub App installation token that stops working in the middle of ``tortoise-bot run``.

PyGithub renews an installation token shortly before the ``expires_at`` GitHub gave, but a
token can stop working earlier for the client: its clock runs behind GitHub's, or the token was
revoked. The emulator expires every installation token right after the first push (the next
call is the pull request, a REST call) and right after the first pull request's labels (the
next call is the second push, a git call). The run must get a new token and go on: exit 0 and
the same end state as one uninterrupted run.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ruamel.yaml import YAML

from tests.reliability.fleet import (
    Fleet,
    finish,
    fleet_config,
    github_state,
    make_fleet,
    run_command,
    start,
)
from tests.reliability.hostile import serve_repositories
from tests.reliability.test_killed_runs import nth, writes_to
from tests.support.github import Call, GitHubEmulator

pytestmark = pytest.mark.github

APP_ID = 31
INSTALLATION_ID = 99
KEY_ENV = "TORTOISE_BOT_APP_PRIVATE_KEY"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Fleet:
    return make_fleet(tmp_path_factory.mktemp("fleet"), services=2, seed=31)


def app_config(path: Path, gh: GitHubEmulator, repositories: tuple[str, ...]) -> Path:
    """Step-limited bot settings that authenticate as the App's installation."""
    config = fleet_config(path, gh, repositories)
    yaml = YAML()
    data = yaml.load(config)
    data["github"].update({"app_id": APP_ID, "installation_id": INSTALLATION_ID})
    with config.open("w") as out:
        yaml.dump(data, out)
    return config


def test_an_installation_token_expiring_mid_run_is_renewed(github_emulator, fleet, tmp_path):
    gh = github_emulator
    repos = ("octo/alone", "octo/expiring")
    serve_repositories(gh, {name: fleet.files for name in repos})
    app = gh.create_app(APP_ID)
    gh.install_app(APP_ID, INSTALLATION_ID, "octo", list(repos))
    key = {KEY_ENV: app.private_key_pem}

    alone = app_config(tmp_path / "alone.yaml", gh, ("octo/alone",))
    code, out = finish(start(run_command(alone, fleet.snapshot), **key))
    assert code == 0, out
    writes = [str(c) for c in gh.calls if writes_to("octo/alone")(c)]
    first_push, first_labels = 1, 3
    assert "git-receive-pack" in writes[first_push - 1] and "pulls" in writes[first_push]
    assert "PATCH" in writes[first_labels - 1] and "git-receive-pack" in writes[first_labels]

    expired: list[int] = []

    def expire(call: Call) -> None:
        expired.append(gh.expire_installation_tokens())

    for n in (first_push, first_labels):
        gh.after(nth(writes_to("octo/expiring"), n), expire)
    gh.reset_calls()
    config = app_config(tmp_path / "expiring.yaml", gh, ("octo/expiring",))
    code, out = finish(start(run_command(config, fleet.snapshot), **key))
    assert code == 0, out
    assert len(expired) == 2 and min(expired) >= 1  # each time, the run's token stopped working
    refused = [c for c in gh.calls if c.status == 401]
    assert {c.kind for c in refused} == {"rest", "git"}, [str(c) for c in refused]
    minted = [c for c in gh.rest_calls() if c.path.endswith("/access_tokens")]
    assert len(minted) == 3 and all(c.status == 201 for c in minted)
    assert github_state(gh, "octo/expiring") == github_state(gh, "octo/alone")
