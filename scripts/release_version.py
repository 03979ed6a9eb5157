"""Check a release tag against the one version source, ``bot.__version__``.

Usage: ``python scripts/release_version.py v1.2.3`` (the release workflow passes the pushed tag).
Prints ``version=1.2.3``, ``major=1`` and ``prerelease=false`` (``key=value`` lines for
``$GITHUB_OUTPUT``) and exits 0 when the tag is ``v`` + ``bot.__version__`` and every example
in ``config/deploy`` names that image version; otherwise prints each disagreement on stderr and
exits 1, before anything is built or pushed.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
IMAGE = "ghcr.io/tortoise-bot/tortoise-bot"
"""The image the examples run (``config/deploy``)."""

SEMVER = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?")
"""``MAJOR.MINOR.PATCH`` with an optional pre-release part (https://semver.org)."""


def source_version() -> str:
    """``bot.__version__``, read from the source without importing the package."""
    tree = ast.parse((PROJECT / "bot" / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets
        ):
            value = ast.literal_eval(node.value)
            if isinstance(value, str):
                return value
    raise SystemExit("bot/__init__.py has no __version__ = '...'")


def problems(tag: str, version: str) -> list[str]:
    """Every way ``tag`` and the examples disagree with ``version``."""
    out = []
    if not SEMVER.fullmatch(version):
        out.append(f"bot.__version__ {version!r} is not MAJOR.MINOR.PATCH[-PRERELEASE]")
    if tag != f"v{version}":
        out.append(f"tag {tag!r} is not v + bot.__version__ (v{version})")
    named = example_tags()
    if not named:
        out.append(f"no example in config/deploy names {IMAGE}")
    for path, named_tag in named:
        if named_tag != version:
            out.append(f"{path} runs {IMAGE}:{named_tag}, not {version}")
    return out


def example_tags() -> list[tuple[str, str]]:
    """``(file, tag)`` of every version of the image the examples name: as ``IMAGE:TAG``, or
    as a Kustomize ``images:`` entry (``newName: IMAGE`` then ``newTag: TAG``)."""
    image = re.escape(IMAGE)
    pattern = re.compile(
        image + r":([^\s\"']+)|newName: " + image + r"\s+newTag: [\"']?([^\s\"']+)"
    )
    found = []
    for path in sorted((PROJECT / "config" / "deploy").rglob("*.yaml")):
        for whole, entry in pattern.findall(path.read_text()):
            found.append((str(path.relative_to(PROJECT)), whole or entry))
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    version = source_version()
    found = problems(argv[0], version)
    for problem in found:
        print(f"release: {problem}", file=sys.stderr)
    if found:
        return 1
    print(f"version={version}")
    print(f"major={version.split('.')[0]}")
    print(f"prerelease={'true' if '-' in version else 'false'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
