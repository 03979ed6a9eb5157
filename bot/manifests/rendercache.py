"""Render cache: what ``kubectl kustomize`` rendered, kept between runs for unchanged inputs.

A scheduled run mostly meets repositories that did not change since the last one, and
``kubectl kustomize`` is most of discovery's CPU. An entry holds the documents ``render`` keeps
(``RENDERED_KINDS``, already parsed) and is found by a key that covers everything the render
depends on::

    key = sha256(CACHE_FORMAT, bot version, RENDERED_KINDS,
                 `kubectl version --client -o json`,
                 overlay directory,
                 for each kustomization directory the build includes: which of
                     KUSTOMIZATION_FILES it holds,
                 for each file the build reads (``renders.Closure.of``): path, sha256 of its
                     bytes on disk, or "absent")

so changing one byte of one input, adding a second kustomization file, or another kubectl gives
another key: an entry never outlives a change of its inputs. kubectl's answer is kept beside the
entries (``IDENTITY_FILE``) with the binary's path, inode, size and modification and
status-change times, and asked again when any of them differs (a replaced or rewritten kubectl). A build that reads something the
key cannot cover (a remote resource, a path outside the repository, ``transformers`` /
``generators`` / ``validators`` / ``helmCharts``, whose configurations may name further files)
is never cached (``Closure.sealed``). Only successful renders are kept. The inputs are hashed
again after a render and the entry is stored only when they did not change meanwhile.

Where: ``$TORTOISE_BOT_CACHE_DIR/renders`` (default ``$XDG_CACHE_HOME/tortoise-bot``, else
``~/.cache/tortoise-bot``), outside any checkout. Bounded: at most
``$TORTOISE_BOT_RENDER_CACHE_MIB`` MiB (default 256; ``0`` turns the cache off); past it, the
least recently used entries (by modification time, refreshed on every hit) are removed. Entries
are written to a temporary file and renamed into place, so concurrent runs sharing the directory
read whole entries or none; an entry that cannot be read or does not hold what its name says
(truncated, edited, another format) is ignored and rendered again, never trusted.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot import __version__
from bot.manifests.kustomize import KUSTOMIZATION_FILES
from bot.manifests.rendering import RENDERED_KINDS, kubectl, render

log = logging.getLogger(__name__)

CACHE_DIR_ENV = "TORTOISE_BOT_CACHE_DIR"
"""Environment variable naming the bot's cache directory (renders go in ``renders/``)."""
CACHE_MIB_ENV = "TORTOISE_BOT_RENDER_CACHE_MIB"
"""Environment variable bounding the render cache, MiB; ``0`` turns it off."""
DEFAULT_CACHE_MIB = 256
"""Default bound of the render cache, MiB (a 2,000-workload render is ~0.1 MiB of JSON)."""
CACHE_FORMAT = "tortoise-bot render cache 2"
"""Changes whenever what an entry holds, or how a render is read, changes."""
VERSION_TIMEOUT_S = 30.0
"""Longest ``kubectl version --client`` may run."""
ENTRY_SUFFIX = ".json"
RESCAN_STORES = 64
"""The directory is measured on the first store of a process, when what this process stored
may have passed the bound, and after this many stores (other runs may share it)."""


def default_directory(env: Mapping[str, str]) -> Path | None:
    """The render cache directory the environment names (None: no home to put it in)."""
    base = env.get(CACHE_DIR_ENV)
    if base:
        return Path(base) / "renders"
    xdg = env.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg) / "tortoise-bot" / "renders"
    home = env.get("HOME")
    return Path(home) / ".cache" / "tortoise-bot" / "renders" if home else None


IDENTITY_FILE = "kubectl.identity"
"""In the cache directory: the last ``kubectl version`` answer and the binary it came from."""

Binary = tuple[str, int, int, int, int, int]
"""A kubectl binary as the file system shows it: real path, device, inode, size, modification
and status-change times (ns). Replacing or rewriting the file changes the last one at least."""

_IDENTITIES: dict[Binary, str | None] = {}
_IDENTITY_LOCK = threading.Lock()


def kubectl_identity(directory: Path | None = None) -> str | None:
    """``kubectl version --client -o json`` of the ``kubectl`` on PATH, or None when there is
    none or it does not answer. Asked once per binary: the answer is kept for the process and,
    with ``directory``, in its ``IDENTITY_FILE`` for the next runs (``kubectl version`` is a
    process start per run, about 60 ms of CPU), used only while the binary is the same file."""
    exe = kubectl()
    if exe is None:
        return None
    real = os.path.realpath(exe)
    try:
        st = os.stat(real)
    except OSError:
        return None
    binary: Binary = (real, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    with _IDENTITY_LOCK:
        if binary in _IDENTITIES:
            return _IDENTITIES[binary]
        found = _stored_identity(directory, binary) if directory is not None else None
        if found is None:
            found = _ask_version(exe, real)
            if found is not None and directory is not None:
                _store_identity(directory, binary, found)
        _IDENTITIES[binary] = found
        return found


def _ask_version(exe: str, real: str) -> str | None:
    try:
        done = subprocess.run(
            [exe, "version", "--client", "-o", "json"],
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{real}\n{done.stdout}" if done.returncode == 0 and done.stdout else None


def _replace_whole(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` (its directory made if need be) through a temporary file
    renamed into place: a reader sees the old file or the whole new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=path.suffix, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _stored_identity(directory: Path, binary: Binary) -> str | None:
    """The identity ``IDENTITY_FILE`` holds for ``binary``; None when it holds another
    binary's, or cannot be read."""
    try:
        entry = json.loads((directory / IDENTITY_FILE).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or entry.get("format") != CACHE_FORMAT:
        return None
    identity = entry.get("identity")
    if entry.get("binary") != list(binary) or not isinstance(identity, str):
        return None
    return identity


def _store_identity(directory: Path, binary: Binary, identity: str) -> None:
    """Write ``IDENTITY_FILE`` atomically; a failure only means asking again next run."""
    data = json.dumps({"format": CACHE_FORMAT, "binary": list(binary), "identity": identity})
    try:
        _replace_whole(directory / IDENTITY_FILE, data.encode())
    except OSError as exc:
        log.debug("render cache: cannot keep the kubectl version in %s: %s", directory, exc)


@dataclass(slots=True)
class CacheStats:
    """What the cache did in this process."""

    hits: int = 0
    misses: int = 0
    stored: int = 0
    ignored: int = 0
    """Entries found but not usable (unreadable, corrupt, another format): rendered again."""
    evicted: int = 0


@dataclass(eq=False)
class RenderCache:
    """A directory of render entries bounded to ``max_bytes``."""

    directory: Path
    max_bytes: int
    stats: CacheStats = field(default_factory=CacheStats)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _estimate: int | None = None
    """Bytes in the directory as of the last scan plus what this process stored since."""
    _since_scan: int = 0

    # ------------------------------------------------------------------ key

    def key(
        self, root: Path, directory: str, files: Iterable[str], dirs: Iterable[str]
    ) -> str | None:
        """The key of the render of ``directory`` in checkout ``root`` reading ``files`` and
        including the kustomization directories ``dirs``; None when it cannot be known (no
        kubectl, a file that cannot be read)."""
        identity = kubectl_identity(self.directory)
        if identity is None:
            return None
        real_root = os.path.realpath(root)
        digest = hashlib.sha256()
        for part in (CACHE_FORMAT, __version__, ",".join(sorted(RENDERED_KINDS)), identity):
            digest.update(part.encode() + b"\0")
        digest.update(f"overlay {directory}\0".encode())
        for kdir in sorted(dirs):
            if not _inside(real_root, root / kdir):
                return None
            held = [n for n in KUSTOMIZATION_FILES if (root / kdir / n).is_file()]
            digest.update(f"dir {kdir} {'/'.join(held)}\0".encode())
        for rel in sorted(files):
            content = _digest(root / rel) if _inside(real_root, root / rel) else None
            if content is None:
                return None
            digest.update(f"file {rel} {content}\0".encode())
        return digest.hexdigest()

    # ------------------------------------------------------------------ entries

    def _path(self, key: str) -> Path:
        return self.directory / f"{key}{ENTRY_SUFFIX}"

    def load(self, key: str) -> list[dict[str, Any]] | None:
        """The documents stored under ``key``, or None (absent, unreadable or corrupt)."""
        path = self._path(key)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            self._count("misses")
            return None
        except OSError:
            self._count("ignored")
            return None
        documents = _documents(raw, key)
        if documents is None:
            log.warning("render cache: ignoring the unreadable entry %s", path)
            self._count("ignored")
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: evicted last
        self._count("hits")
        return documents

    def store(self, key: str, documents: list[dict[str, Any]]) -> None:
        """Keep ``documents`` under ``key`` (atomically); a failure only logs."""
        try:
            text = json.dumps({"format": CACHE_FORMAT, "key": key, "documents": documents})
        except (TypeError, ValueError):
            return  # not plain JSON data: rendered each time
        if json.loads(text)["documents"] != documents:
            return  # keys that are not strings, NaN...: JSON would not give them back
        data = text.encode()
        if len(data) > self.max_bytes:
            return
        try:
            _replace_whole(self._path(key), data)
        except OSError as exc:
            log.warning("render cache: cannot write in %s: %s", self.directory, exc)
            return
        self._count("stored")
        with self._lock:
            self._since_scan += 1
            if self._estimate is not None:
                self._estimate += len(data)
            due = (
                self._estimate is None
                or self._estimate > self.max_bytes
                or self._since_scan >= RESCAN_STORES
            )
        if due:
            self.prune()

    def prune(self) -> None:
        """Remove the least recently used entries until the cache fits ``max_bytes`` (the
        directory is measured whole: other runs may have written to it)."""
        entries = []
        try:
            with os.scandir(self.directory) as found:
                for item in found:
                    if not item.name.endswith(ENTRY_SUFFIX) or item.name.startswith(".tmp-"):
                        continue
                    try:
                        st = item.stat()
                    except OSError:
                        continue
                    entries.append((st.st_mtime_ns, st.st_size, item.path))
        except OSError:
            return
        total = sum(size for _, size, _ in entries)
        for _, size, path in sorted(entries):
            if total <= self.max_bytes:
                break
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass  # another run removed it
            except OSError:
                continue
            total -= size
            self._count("evicted")
        with self._lock:
            self._estimate, self._since_scan = total, 0

    def _count(self, what: str) -> None:
        with self._lock:
            setattr(self.stats, what, getattr(self.stats, what) + 1)


def _inside(real_root: str, path: Path) -> bool:
    """Whether ``path`` (through every symlink) stays in the checkout: outside it, what kubectl
    reads is not the repository's, and the key could not follow it."""
    real = os.path.realpath(path)
    return real == real_root or real.startswith(real_root + os.sep)


def _digest(path: Path) -> str | None:
    """sha256 of a file's bytes, or ``absent``; None when it cannot be read or is a directory
    (a directory with no kustomization does not build). Always read afresh: a timestamp may
    not change when a byte does."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return "absent"
    except OSError:
        return None
    return hashlib.sha256(data).hexdigest()


def _documents(raw: bytes, key: str) -> list[dict[str, Any]] | None:
    try:
        entry = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(entry, dict) or entry.get("format") != CACHE_FORMAT:
        return None
    documents = entry.get("documents")
    if entry.get("key") != key or not isinstance(documents, list):
        return None
    if not all(isinstance(d, dict) for d in documents):
        return None
    return documents


_CACHES: dict[tuple[Path, int], RenderCache] = {}
_CACHES_LOCK = threading.Lock()


def render_cache(env: Mapping[str, str] | None = None) -> RenderCache | None:
    """The render cache the environment configures (one per directory and bound in a
    process), or None when it is off."""
    env = os.environ if env is None else env
    try:
        mib = int(env.get(CACHE_MIB_ENV) or DEFAULT_CACHE_MIB)
    except ValueError:
        log.warning(
            "render cache: %s=%r is not a number of MiB: off", CACHE_MIB_ENV, env.get(CACHE_MIB_ENV)
        )
        return None
    directory = default_directory(env)
    if mib <= 0 or directory is None:
        return None
    with _CACHES_LOCK:
        cache = _CACHES.get((directory, mib))
        if cache is None:
            cache = _CACHES[(directory, mib)] = RenderCache(directory, mib * 2**20)
        return cache


def render_cached(
    cache: RenderCache | None,
    root: Path,
    directory: str,
    kustomization: str,
    inputs: tuple[frozenset[str], frozenset[str]] | None,
) -> list[dict[str, Any]]:
    """``rendering.render`` of ``directory``, from ``cache`` when an entry holds it; ``inputs``
    are (files, kustomization directories) the build reads, None when they are not known
    (``Closure.sealed``): then it is always rendered."""
    key = cache.key(root, directory, *inputs) if cache is not None and inputs else None
    if key is not None:
        assert cache is not None
        documents = cache.load(key)
        if documents is not None:
            return documents
    documents = render(root, directory, kustomization)
    if key is not None and cache is not None and cache.key(root, directory, *inputs or ()) == key:
        cache.store(key, documents)
    return documents
