"""The bot's GitHub: which repositories the credentials reach, and a session on each."""

from __future__ import annotations

from pathlib import Path

from github import Auth, Github, GithubIntegration

from bot.config.forge import GitHubConfig, PullRequestConfig
from bot.forge.github.api import PER_PAGE, RepositoryApi, make_retry, translated
from bot.forge.github.auth import AppCredentials, Credentials, RepositoryAuth, repository_auth
from bot.forge.github.session import RepositorySession


class GitHubForge:
    """The bot's GitHub: ``open(full_name, pull_requests)`` gives a ``RepositorySession``."""

    def __init__(self, config: GitHubConfig, credentials: Credentials, *, workdir: Path) -> None:
        self.config = config
        self.credentials = credentials
        self.workdir = workdir
        self._integration: GithubIntegration | None = None
        if isinstance(credentials, AppCredentials):
            self._integration = GithubIntegration(
                base_url=config.api_url,
                auth=Auth.AppAuth(credentials.app_id, credentials.private_key_pem),
                timeout=max(1, round(config.timeout_s)),
                retry=make_retry(config),
                seconds_between_requests=config.seconds_between_requests,
                seconds_between_writes=config.seconds_between_writes,
            )

    def client(self, auth: RepositoryAuth) -> Github:
        return Github(
            base_url=self.config.api_url,
            auth=auth.auth,
            timeout=max(1, round(self.config.timeout_s)),
            per_page=PER_PAGE,
            retry=make_retry(self.config),
            seconds_between_requests=self.config.seconds_between_requests,
            seconds_between_writes=self.config.seconds_between_writes,
            lazy=True,
        )

    def repositories(self) -> list[str]:
        """``owner/name`` of every repository the credentials reach, sorted.

        App: the repositories of each installation (or of ``installation_id`` only); token: the
        repositories of the authenticated user (``GET /user/repos``).
        """
        names: set[str] = set()
        if isinstance(self.credentials, AppCredentials):
            integration = self._integration
            assert integration is not None
            wanted = self.credentials.installation_id
            with translated("-", "list installations"):
                for installation in integration.get_installations():
                    if wanted is None or installation.id == wanted:
                        names.update(r.full_name for r in installation.get_repos())
        else:
            client = self.client(RepositoryAuth(Auth.Token(self.credentials.token)))
            with translated("-", "list repositories"):
                names.update(r.full_name for r in client.get_user().get_repos())
        return sorted(names)

    def open(
        self, full_name: str, pull_requests: PullRequestConfig, *, dashboard: bool = True
    ) -> RepositorySession:
        """A session on ``full_name``; App credentials get this repository's installation token."""
        with translated(full_name, "authenticate"):
            auth = repository_auth(self.credentials, full_name, self._integration)
        api = RepositoryApi(
            self.client(auth),
            full_name,
            auth,
            max_rate_limit_wait_s=self.config.max_rate_limit_wait_s,
        )
        return RepositorySession(
            api,
            pull_requests,
            workdir=self.workdir,
            git_timeout_s=self.config.git_timeout_s,
            dashboard=dashboard,
        )


__all__ = ["GitHubForge"]
