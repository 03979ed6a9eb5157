"""What stops one repository: the time it may take (``Budget``), and how a failure reads
(``failure_message``) on its dashboard and in the run's summary."""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass

from bot.config.errors import ConfigError
from bot.forge.errors import ForgeError
from bot.manifests.errors import ManifestError
from bot.metrics.errors import MetricsError

__all__ = [
    "KNOWN_FAILURES",
    "Budget",
    "RepositoryCrashError",
    "RepositoryTimeoutError",
    "failure_message",
]


class RepositoryTimeoutError(Exception):
    """A repository took longer than ``run.repository_timeout_s``: it stopped between two
    steps (or its fetch ran out of time), before writing anything more."""


class RepositoryCrashError(Exception):
    """Reading a repository's manifests killed the process that read them (a signal): the
    repository fails, the run goes on with the others."""

    def __init__(self, signal_number: int) -> None:
        try:
            name = signal.Signals(signal_number).name
        except ValueError:
            name = f"signal {signal_number}"
        super().__init__(
            f"reading the repository's manifests crashed the process that read them ({name}); "
            "nothing written"
        )
        self.signal_number = signal_number


@dataclass(frozen=True, slots=True)
class Budget:
    """The time one repository may take (``run.repository_timeout_s``), from its start.

    ``deadline`` is ``time.monotonic()`` seconds. Steps check it between them, and discovery and
    editing before each file, overlay, object and workload (``check`` is their ``Checkpoint``);
    a fetch gets ``left_s()`` as its budget, a render, git and GitHub calls have their own
    timeouts. No check runs while files are written, so a repository stops cleanly, never
    halfway through a write.
    """

    seconds: float
    deadline: float

    @classmethod
    def start(cls, seconds: float) -> Budget:
        return cls(seconds, time.monotonic() + seconds)

    def left_s(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def check(self, before: str, *, cause: Exception | None = None) -> None:
        """Raise ``RepositoryTimeoutError`` when the time is up (``before``: the next step)."""
        if time.monotonic() < self.deadline:
            return
        message = (
            f"took longer than run.repository_timeout_s ({self.seconds:g} s): stopped before "
            f"{before}, nothing written"
        )
        if cause is not None:
            message += f" (last error: {cause})"
        raise RepositoryTimeoutError(message) from cause


KNOWN_FAILURES = (
    ConfigError,
    MetricsError,
    ManifestError,
    ForgeError,
    RepositoryTimeoutError,
    RepositoryCrashError,
)
"""The package error families: a failure of the repository's input or of a server, reported
with its own message. Any other exception is a bug, contained all the same."""


def failure_message(exc: Exception) -> str:
    """What a failed repository (or workload) reports: the package error's own message, or
    the exception's type and text for anything else (a bug, named as such)."""
    if isinstance(exc, KNOWN_FAILURES):
        return str(exc)
    return f"internal error ({type(exc).__name__}: {exc}); please report it with the log"
