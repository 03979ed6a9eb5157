"""Which repository a snapshot belongs to: recorded by ``snapshot`` and ``simulate``, checked
by ``plan --snapshot``, ``explain --snapshot`` and ``run --snapshot``.

A history recorded for one repository replayed on another gives every workload "not in the
snapshot" or, worse, another repository's numbers for workloads of the same name: such a
snapshot is refused (exit 2) unless ``--force``. Snapshots recorded before the record existed
are accepted with a note on stderr.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO
from urllib.parse import urlsplit

from bot.errors import UsageError
from bot.metrics.snapshot import SnapshotOrigin, SnapshotSource

if TYPE_CHECKING:  # the selection options live with the other shared options
    from bot.commands.common import WorkloadSelector

GIT_TIMEOUT_S = 10.0
"""How long reading a checkout's remote may take."""

_SCP_LIKE = re.compile(r"^(?:[^@/]+@)?(?P<host>[^:/]+):(?P<path>.+)$")
"""``git@github.com:octo/shop.git``: git's scp-like remote syntax."""


def without_credentials(url: str) -> str:
    """``url`` with any ``user:token@`` removed: a remote is written into the snapshot and
    shown in messages, never a secret it carries."""
    parts = urlsplit(url)
    if parts.scheme and parts.netloc:
        host = parts.netloc.rsplit("@", 1)[-1]
        return parts._replace(netloc=host).geturl()
    return url


def checkout_remote(root: Path) -> str | None:
    """The ``origin`` remote of the checkout at ``root`` (credentials removed); None when it
    is not a git checkout, has no ``origin`` or git does not answer in time."""
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "remote", "get-url", "origin"],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    url = done.stdout.strip()
    return without_credentials(url) if done.returncode == 0 and url else None


def checkout_origin(root: Path, selected: WorkloadSelector | None = None) -> SnapshotOrigin:
    """What a snapshot of the checkout at ``root`` records: its name, remote and selection."""
    asked = {
        "namespace": selected.namespace if selected else None,
        "workload": selected.workload if selected else None,
        "environment": selected.environment if selected else None,
    }
    return SnapshotOrigin(
        root.resolve().name,
        checkout_remote(root),
        {k: v for k, v in asked.items() if v},
    )


def _repository_path(remote: str) -> str:
    """``octo/shop`` of ``https://github.com/octo/shop.git`` or ``git@github.com:octo/shop``:
    the remote's path, lower case, without ``.git``, comparable across URL syntaxes."""
    scp = None if "://" in remote else _SCP_LIKE.match(remote)
    path = scp.group("path") if scp else urlsplit(remote).path
    path = path.strip("/").lower()
    return path.removesuffix(".git")


@dataclass(frozen=True, slots=True)
class Repository:
    """A repository a snapshot is about to be replayed on: its name (the checkout's directory
    name, or the forge's ``owner/name``) and its remote when known."""

    name: str
    remote: str | None = None

    @classmethod
    def of_checkout(cls, root: Path) -> Repository:
        return cls(root.resolve().name, checkout_remote(root))

    def matches(self, origin: SnapshotOrigin) -> bool:
        """Both remotes known: the same repository path; otherwise the same name (the last
        segment of ``owner/name``)."""
        if self.remote and origin.remote:
            return _repository_path(self.remote) == _repository_path(origin.remote)
        if origin.remote and "/" in self.name:
            return _repository_path(origin.remote).endswith(self.name.lower())
        return self.name.rsplit("/", 1)[-1].lower() == origin.name.lower()

    def describe(self) -> str:
        return f"{self.name} ({self.remote})" if self.remote else self.name


def check_snapshot(
    source: SnapshotSource,
    repositories: Sequence[Repository],
    *,
    force: bool,
    selected: WorkloadSelector | None = None,
    out: TextIO | None = None,
) -> None:
    """Refuse (``UsageError``, exit 2) a snapshot recorded for another repository than every
    one of ``repositories`` unless ``force``; notes on ``out`` (stderr) for a snapshot without
    the record, a forced one, and a selection other than the one it was recorded for."""
    out = out if out is not None else sys.stderr
    origin = source.snapshot.origin
    where = source.path
    if origin is None:
        print(
            f"note: snapshot {where} does not record its repository (recorded by an older "
            "version): not checked",
            file=out,
        )
        return
    others = [r for r in repositories if not r.matches(origin)]
    if others:
        names = ", ".join(r.describe() for r in others)
        if not force:
            raise UsageError(
                f"--snapshot {where} was recorded for repository {origin.describe()}, "
                f"not {names}: record one for this repository (tortoise-bot snapshot), "
                "or pass --force to replay it anyway"
            )
        print(
            f"note: snapshot {where} of {origin.describe()} replayed on {names} (--force)",
            file=out,
        )
    recorded = ", ".join(f"{k} {v}" for k, v in origin.selection.items())
    asked = selected.describe() if selected else ""
    if recorded and recorded != asked:
        print(
            f"note: snapshot {where} was recorded for {recorded} only: workloads outside it "
            "have no history in it",
            file=out,
        )
