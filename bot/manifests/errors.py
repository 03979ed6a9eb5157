"""Manifest errors: every one names the repository file and the 1-based line (0 when unknown).

Hierarchy::

    ManifestError(file, line, message)
    ├── ManifestParseError     a file cannot be read as YAML: syntax, duplicate key, alias bomb,
    │                          too large, not UTF-8, a symlink leading outside the repository
    ├── KustomizeError         a kustomization cannot be read or does not build
    ├── EditError              a change cannot be planned (no such container, HPA or field,
    │                          a value the editor cannot locate or rewrite)
    │   └── SharedFileError    the value lives only in a file renders of other environments
    │                          read, and the environment has no file of its own for it
    └── VerificationError      the edited files do not read or render back exactly the intended values
"""

from __future__ import annotations

from bot.model import SourceError


class ManifestError(Exception):
    """A problem in one repository file: ``file`` is repository-relative, ``line`` 1-based or 0."""

    def __init__(self, file: str, line: int, message: str) -> None:
        self.file = file
        self.line = line
        self.message = message
        super().__init__(f"{file}:{line}: {message}" if line else f"{file}: {message}")

    def as_source_error(self) -> SourceError:
        """The seam type the inventory and edit results carry."""
        return SourceError(self.file, self.line, self.message)


class ManifestParseError(ManifestError):
    """A file is not readable YAML (or not allowed to be read)."""


class KustomizeError(ManifestError):
    """A kustomization cannot be read or ``kubectl kustomize`` fails on it."""


class EditError(ManifestError):
    """A change cannot be planned."""


class SharedFileError(EditError):
    """A change would have to be written in a file other environments' renders read: that
    field is skipped, the workload's other changes go on. ``why`` is the reason without the
    workload and field (``it is written in ..., which other renders read ...``)."""

    def __init__(self, file: str, line: int, message: str, why: str = "") -> None:
        super().__init__(file, line, message)
        self.why = why or message


class VerificationError(ManifestError):
    """The edited files do not read or render back exactly the intended values."""
