"""The repository as discovery sees it: which files to read, read safely, each parsed once.

``RepoFiles`` lists the files matching ``paths.include`` minus ``paths.exclude`` (globs relative
to the root, ``**`` crossing directories, matched by ``bot.manifests.globs``), refuses symlinks
that lead outside the repository and files larger than ``paths.max_file_bytes``, and caches
every parse. A symlink that stays inside the repository is read as the file it names (its
canonical path): the file is listed and parsed once, and an edit changes the target, never
the link. ``overrides`` replaces the
bytes of some files (or adds new ones): the editor reads its planned result through them.
``check`` (a ``Checkpoint``) is called before each file is read and parsed, and by discovery and
the editor before each overlay, object and workload: the repository's deadline
(``run.repository_timeout_s``) holds inside those stages, not only between them.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath

from bot.config.manifests import PathsConfig
from bot.manifests.errors import ManifestError, ManifestParseError
from bot.manifests.globs import matches_any
from bot.manifests.yamldoc import YamlFile, parse_file

SKIPPED_DIRS = frozenset({".git", ".hg", ".svn"})
"""Directories never read."""

Checkpoint = Callable[[str], None]
"""Called with the work about to start (``reading deploy.yaml``); raises to stop the repository
there (``pipeline.failures.Budget.check``: its time is up). Never called while files are written."""


def normalize(path: str) -> str:
    """A repository-relative POSIX path without ``.``/``..`` parts ('' is the root)."""
    parts: list[str] = []
    for part in PurePosixPath(path).parts:
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                return "../"  # leaves the repository
            parts.pop()
        else:
            parts.append(part)
    return "/".join(parts)


def join(directory: str, relative: str) -> str:
    """``relative`` resolved against a repository directory (may start with ``../``)."""
    return normalize(f"{directory}/{relative}" if directory else relative)


class RepoFiles:
    """Safe, cached access to the files of one checkout."""

    def __init__(
        self,
        root: Path,
        paths: PathsConfig,
        overrides: Mapping[str, bytes] | None = None,
        *,
        check: Checkpoint | None = None,
    ) -> None:
        self.root = root.resolve()
        self.paths = paths
        self.check = check
        self.overrides = dict(overrides or {})
        self._parsed: dict[str, YamlFile | ManifestError] = {}
        self._adopted: dict[str, YamlFile] = {}
        """Parses of another checkout of the same tree, served only for identical bytes."""
        self._listing: list[str] | None = None
        self._everything: list[str] | None = None
        self._walked: list[str] | None = None
        self.listing_errors: list[ManifestError] = []
        self._safe: dict[str, Path] = {}
        self._canonical: dict[str, str] = {}
        self._exists: dict[str, bool] = {}
        self._dirs: dict[str, bool] = {}

    def listing(self) -> list[str]:
        """Every included file, sorted (symlinks leading outside are reported, not listed)."""
        if self._listing is not None:
            return self._listing
        found: set[str] = set()
        for rel in self._walk():
            if not matches_any(rel, self.paths.include) or matches_any(rel, self.paths.exclude):
                continue
            try:
                found.add(self.canonical(rel))
            except ManifestError as exc:
                self.listing_errors.append(exc)
        self._listing = sorted(found)
        return self._listing

    def everything(self) -> list[str]:
        """Every safe file of the checkout, whatever ``paths`` selects, sorted: what renders
        outside the opt-in paths read (see ``renders``)."""
        if self._everything is None:
            self._everything = sorted(
                rel for rel in self._walk() if self._probe(rel, lambda _: True)
            )
        return self._everything

    def _walk(self) -> list[str]:
        """Every file under the root (skipped directories left out) and every override, walked
        once."""
        if self._walked is None:
            found: list[str] = []
            for dirpath, dirnames, filenames in os.walk(self.root):
                dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS)
                rel_dir = Path(dirpath).relative_to(self.root).as_posix()
                found.extend(name if rel_dir == "." else f"{rel_dir}/{name}" for name in filenames)
            self._walked = [*found, *self.overrides]
        return self._walked

    def _check_path(self, rel: str) -> Path:
        """The absolute path of ``rel``; refuses paths that lead (or link) outside the root."""
        known = self._safe.get(rel)
        if known is not None:
            return known
        if rel.startswith("../") or rel == "..":
            raise ManifestParseError(rel, 0, "path leads outside the repository")
        full = self.root / rel
        real = Path(os.path.realpath(full))
        if real != self.root and not real.is_relative_to(self.root):
            raise ManifestParseError(rel, 0, "symlink leads outside the repository")
        self._safe[rel] = full
        self._canonical[rel] = real.relative_to(self.root).as_posix() if real != full else rel
        return full

    def canonical(self, rel: str) -> str:
        """The repository path of the file ``rel`` names: ``rel`` itself, or the target of the
        symlinks on its way (inside the repository; outside raises ``ManifestParseError``)."""
        if rel in self.overrides:
            return rel
        self._check_path(rel)
        return self._canonical[rel]

    def exists(self, rel: str) -> bool:
        """Whether ``rel`` is a file inside the repository (cached)."""
        if rel in self.overrides:
            return True
        known = self._exists.get(rel)
        if known is None:
            known = self._exists[rel] = self._probe(rel, Path.is_file)
        return known

    def _probe(self, rel: str, test: Callable[[Path], bool]) -> bool:
        try:
            return test(self._check_path(rel))
        except ManifestError:
            return False

    def is_dir(self, rel: str) -> bool:
        """Whether ``rel`` is a directory inside the repository (cached)."""
        if rel.startswith("../"):
            return False
        if not rel:
            return True
        known = self._dirs.get(rel)
        if known is None:
            known = any(p.startswith(rel + "/") for p in self.overrides)
            known = self._dirs[rel] = known or self._probe(rel, Path.is_dir)
        return known

    def read(self, rel: str) -> bytes:
        """The bytes of a file; ``ManifestParseError`` if it is unsafe, too large or missing."""
        if rel in self.overrides:
            data = self.overrides[rel]
        else:
            full = self._check_path(rel)
            try:
                size = full.stat().st_size
                if size > self.paths.max_file_bytes:
                    raise ManifestParseError(
                        rel,
                        0,
                        f"file is {size} bytes, larger than the limit of "
                        f"{self.paths.max_file_bytes} (paths.max_file_bytes)",
                    )
                data = full.read_bytes()
            except OSError as exc:
                raise ManifestParseError(rel, 0, f"cannot read: {exc.strerror or exc}") from exc
        if len(data) > self.paths.max_file_bytes:
            raise ManifestParseError(rel, 0, f"file larger than {self.paths.max_file_bytes} bytes")
        return data

    def parse(self, rel: str) -> YamlFile:
        """The parsed file, cached; raises the same ``ManifestError`` on every call. A path
        through a symlink gives the parse of its target (``canonical``), path included."""
        cached = self._parsed.get(rel)
        if cached is None and rel not in self.overrides:
            try:
                target = self.canonical(rel)
            except ManifestError as exc:
                self._parsed[rel] = exc
                raise
            if target != rel:
                cached = self._parsed[rel] = self._parsed.get(target) or self._parse(target)
        if cached is None:
            cached = self._parse(rel)
        if isinstance(cached, ManifestError):
            raise cached
        return cached

    def checkpoint(self, before: str) -> None:
        """Call ``check`` (if any) before the work ``before`` names: it may raise to stop."""
        if self.check is not None:
            self.check(before)

    def _parse(self, rel: str) -> YamlFile | ManifestError:
        """Read and parse ``rel`` once (cached, errors included), at a checkpoint."""
        self.checkpoint(f"reading {rel}")
        cached: YamlFile | ManifestError
        try:
            data = self.read(rel)
            known = self._adopted.pop(rel, None)
            cached = known if known is not None and known.raw == data else parse_file(rel, data)
        except ManifestError as exc:
            cached = exc
        self._parsed[rel] = cached
        return cached

    def problems(self) -> list[ManifestError]:
        """The broken documents of the files parsed so far whose other documents were read."""
        return [
            problem
            for parsed in self._parsed.values()
            if isinstance(parsed, YamlFile)
            for problem in parsed.problems
        ]

    def adopt(self, other: RepoFiles, changed: set[str]) -> None:
        """Reuse ``other``'s parses of the files not in ``changed`` (a copy of the same tree).

        A reused parse is served only when the file's bytes here are identical to the bytes it
        was parsed from (read and compared on first use), so a file changed by anyone, listed in
        ``changed`` or not, is always parsed afresh.
        """
        for path, parsed in other._parsed.items():
            if path not in changed and isinstance(parsed, YamlFile):
                self._adopted.setdefault(path, parsed)


def parse_all(root: Path, paths: PathsConfig) -> None:
    """Read and parse every file of the checkout that ``paths`` includes, for nothing but the
    reading: what a run does first in a worker process (``bot.worker_pool.rehearse``), so a
    file that would crash the YAML parser's C code fails its repository, not the run. Files
    that do not parse are reported later, by discovery."""
    files = RepoFiles(root, paths)
    for rel in files.listing():
        with contextlib.suppress(ManifestError):
            files.parse(rel)
