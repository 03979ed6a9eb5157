"""Credentials for GitHub: a token, or a GitHub App (JWT -> installation token per repository).

Secrets reach this module as values (the CLI reads the environment variables named in
``GitHubConfig``); they are never logged, never put in argv and never written to disk.
PyGithub's ``AppInstallationAuth`` refreshes an installation token shortly before the
``expires_at`` GitHub gave (``github/Auth.py``, ``TOKEN_REFRESH_THRESHOLD_TIMEDELTA``, 20 s); git
reads the same token. A token can still stop working earlier for this process (its clock runs
behind GitHub's, or the token was revoked): ``RepositoryAuth.renew`` then gets a new one, and
the forge calls it once when GitHub answers 401 to an installation token (REST or git).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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


class InstallationAuth(Auth.Auth):
    """An App installation's token for PyGithub, renewed before its ``expires_at`` (PyGithub)
    and on demand (``renew``): each renewal asks GitHub for a new token."""

    def __init__(self, make: Callable[[], Auth.AppInstallationAuth]) -> None:
        self._make = make
        self._current = make()

    @property
    def token_type(self) -> str:
        return "token"

    @property
    def token(self) -> str:
        return self._current.token

    def renew(self) -> None:
        """Drop the current token; the next use asks GitHub for a new one."""
        self._current = self._make()


class RepositoryAuth:
    """PyGithub auth for one repository plus the token git uses; App tokens refresh themselves."""

    def __init__(self, auth: Auth.Token | InstallationAuth) -> None:
        self.auth = auth
        self.renewals = 0

    @property
    def token(self) -> str:
        """The current token (an installation token is renewed before it expires)."""
        return self.auth.token

    def renew(self) -> bool:
        """Get a new installation token after GitHub refused the current one; False for a fixed
        token (a personal or given token cannot be renewed: the refusal stands)."""
        if not isinstance(self.auth, InstallationAuth):
            return False
        self.auth.renew()
        self.renewals += 1
        return True


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
    number = installation_id
    return RepositoryAuth(
        InstallationAuth(lambda: app.get_installation_auth(number, requester=integration.requester))
    )
