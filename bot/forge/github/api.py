"""GitHub's REST API for one repository through PyGithub: retries, a bound on each answer's size
(``answers``), errors as ``ForgeError``, a refused installation token renewed once, and the
primary request budget."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import requests
from github import Github, GithubRetry
from github.GithubException import (
    BadCredentialsException,
    GithubException,
    RateLimitExceededExceedsMaxWait,
    RateLimitExceededException,
)
from github.Repository import Repository

from bot.config.forge import GitHubConfig
from bot.forge.errors import AuthError, ForgeError, RateLimitError
from bot.forge.github.answers import AnswerTooLarge, BoundedRetry, install
from bot.forge.github.auth import RepositoryAuth

LOG = logging.getLogger(__name__)

PER_PAGE = 100
"""Items per page of every listing (GitHub's maximum)."""

T = TypeVar("T")


def make_retry(config: GitHubConfig) -> GithubRetry:
    """PyGithub's retry policy from settings: 5xx and 429 with backoff, 403 rate limits; it
    carries ``max_response_bytes`` to every connection of the client (``answers``).

    ``GithubRetry`` (``github/GithubRetry.py``) waits for ``X-RateLimit-Reset`` on a primary
    limit, ``Retry-After`` or ``secondary_rate_wait`` on a secondary one, and raises
    ``RateLimitExceededExceedsMaxWait`` when the wait would exceed ``max_rate_limit_wait``.
    """
    install()
    return BoundedRetry(
        max_response_bytes=config.max_response_bytes,
        total=config.retries,
        backoff_factor=config.backoff_factor,
        status_forcelist=[*range(500, 600), 429],
        max_rate_limit_wait=config.max_rate_limit_wait_s,
        secondary_rate_wait=config.secondary_rate_wait_s,
    )


@contextmanager
def translated(repo: str, operation: str) -> Iterator[None]:
    """PyGithub and requests exceptions as ``ForgeError`` subclasses."""
    try:
        yield
    except RateLimitExceededExceedsMaxWait as exc:
        raise RateLimitError(
            repo, operation, "rate limit: waiting would exceed the limit", exc.wait
        ) from exc
    except RateLimitExceededException as exc:
        raise RateLimitError(repo, operation, "rate limit exceeded") from exc
    except BadCredentialsException as exc:
        raise AuthError(repo, operation, "GitHub refused the credentials", exc.status) from exc
    except GithubException as exc:
        message = exc.data.get("message", str(exc)) if isinstance(exc.data, dict) else str(exc.data)
        raise ForgeError(repo, operation, str(message), exc.status) from exc
    except AnswerTooLarge as exc:
        raise ForgeError(repo, operation, str(exc)) from exc
    except requests.RequestException as exc:
        raise ForgeError(repo, operation, f"{type(exc).__name__}: {exc}") from exc
    except RecursionError as exc:  # PyGithub decodes answers with ``json``, which raises this
        raise ForgeError(repo, operation, "GitHub's answer is nested too deeply to read") from exc


def error_messages(exc: GithubException) -> str:
    """The message of a GitHub error response and of each of its ``errors``, joined."""
    data = exc.data if isinstance(exc.data, dict) else {}
    parts = [str(data.get("message", ""))]
    for err in data.get("errors", []) or []:
        if isinstance(err, dict):
            parts.append(str(err.get("message", "")))
    return " ".join(parts)


class RepositoryApi:
    """One repository's REST client (``repo``, no request until used) and how it is called."""

    def __init__(
        self, github: Github, full_name: str, auth: RepositoryAuth, *, max_rate_limit_wait_s: float
    ) -> None:
        self.github = github
        self.full_name = full_name
        self.auth = auth
        self.max_rate_limit_wait_s = max_rate_limit_wait_s
        self.repo: Repository = github.get_repo(full_name)

    @property
    def owner(self) -> str:
        return self.full_name.split("/")[0]

    def call(self, operation: str, fn: Callable[[], T]) -> T:
        """``fn()`` with PyGithub's errors translated; when GitHub refuses an installation token
        (401), once more with a new token (``RepositoryAuth.renew``)."""
        with translated(self.full_name, operation):
            try:
                return fn()
            except BadCredentialsException:
                if not self.auth.renew():
                    raise
                LOG.warning("%s: GitHub refused the installation token; renewed it", self.full_name)
                return fn()

    def requests_left(self) -> int | None:
        """REST requests left in GitHub's primary budget as the last response reported
        (``X-RateLimit-Remaining``, no request made); None before the first response."""
        remaining, limit = self.github.requester.rate_limiting
        return None if limit < 0 else remaining

    def reserve(self, needed: int, before: str) -> None:
        """Make sure ``needed`` REST requests are left before a step that writes, so a pull
        request is never left half-made (opened without its labels, closed without its
        comment) and the dashboard can still say what was not done.

        Short of them: wait for the budget's reset when it comes within
        ``max_rate_limit_wait_s``, else raise ``RateLimitError`` (the run stops there). With
        several processes on one budget (shards) another may spend it meanwhile; then GitHub's
        403 stops the run in the middle of a step and the next run repairs what it left
        (``bot.forge.act.StepWriter.undecorated``)."""
        left = self.requests_left()
        if left is None or left >= needed:
            return
        wait_s = self.github.requester.rate_limiting_resettime - time.time()
        if 0 <= wait_s <= self.max_rate_limit_wait_s:
            time.sleep(wait_s + 1)
            return
        raise RateLimitError(
            self.full_name,
            before,
            f"rate limit: {left} requests left of the API budget, {needed} needed; stopped before it",
            max(wait_s, 0.0),
            status=None,
        )

    def close(self) -> None:
        """Release the client's HTTP connections."""
        self.github.close()


__all__ = ["PER_PAGE", "RepositoryApi", "error_messages", "make_retry", "translated"]
