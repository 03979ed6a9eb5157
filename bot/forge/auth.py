"""Credentials for GitHub: a token, or a GitHub App (JWT -> installation token per repository).

Secrets reach this module as values (the CLI reads the environment variables named in
``GitHubConfig``); they are never logged, never put in argv and never written to disk.
PyGithub's ``AppInstallationAuth`` refreshes an installation token shortly before it expires
(``github/Auth.py``, ``TOKEN_REFRESH_THRESHOLD_TIMEDELTA``); git reads the same token.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from github import Auth, GithubIntegration
from github.GithubException import GithubException

from bot.config.forge import GitHubConfig
from bot.forge.errors import AuthError


@dataclass(frozen=True, slots=True)
class TokenCredentials:
    """A personal access token or any installation token obtained elsewhere."""

    token: str

    def __repr__(self) -> str:
        return "TokenCredentials(token=***)"


@dataclass(frozen=True, slots=True)
class AppCredentials:
    """A GitHub App: id and PEM private key; ``installation_id`` None = looked up per repository."""

    app_id: int
    private_key_pem: str
    installation_id: int | None = None

    def __repr__(self) -> str:
        return (
            f"AppCredentials(app_id={self.app_id}, installation_id={self.installation_id}, key=***)"
        )


Credentials = TokenCredentials | AppCredentials


def credentials_from_env(config: GitHubConfig, env: Mapping[str, str]) -> Credentials:
    """App credentials when ``app_id`` is set, else the token; raises ``AuthError`` when missing."""
    if config.app_id is not None:
        key = env.get(config.app_private_key_env, "")
        if "PRIVATE KEY" not in key:
            raise AuthError(
                "-", "credentials", f"{config.app_private_key_env} holds no PEM private key"
            )
        return AppCredentials(config.app_id, key, config.installation_id)
    token = env.get(config.token_env, "").strip()
    if not token:
        raise AuthError("-", "credentials", f"{config.token_env} is not set")
    return TokenCredentials(token)


class RepositoryAuth:
    """PyGithub auth for one repository plus the token git uses; App tokens refresh themselves."""

    def __init__(self, auth: Auth.Token | Auth.AppInstallationAuth) -> None:
        self.auth = auth

    @property
    def token(self) -> str:
        """The current token (an installation token is renewed before it expires)."""
        return self.auth.token


def repository_auth(
    credentials: Credentials, full_name: str, integration: GithubIntegration | None
) -> RepositoryAuth:
    """Auth for ``full_name``: the token itself, or an installation token of the App."""
    if isinstance(credentials, TokenCredentials):
        return RepositoryAuth(Auth.Token(credentials.token))
    assert integration is not None, "App credentials need a GithubIntegration"
    installation_id = credentials.installation_id
    if installation_id is None:
        owner, _, name = full_name.partition("/")
        try:
            installation_id = integration.get_repo_installation(owner, name).id
        except GithubException as exc:
            raise AuthError(
                full_name, "find the App installation", str(exc.data), exc.status
            ) from exc
    app = Auth.AppAuth(credentials.app_id, credentials.private_key_pem)
    return RepositoryAuth(
        app.get_installation_auth(installation_id, requester=integration.requester)
    )
