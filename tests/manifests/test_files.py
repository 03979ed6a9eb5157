"""RepoFiles: parses reused from another checkout of the same tree are served only for identical
bytes, so verification never reads a stale parse of a changed file."""

from __future__ import annotations

from pathlib import Path

from bot.config.manifests import PathsConfig
from bot.manifests.files import RepoFiles
from bot.manifests.yamldoc import YScalar, node_at
from tests.manifests.conftest import write_tree

BEFORE = "a: 1 # keep\n"
AFTER = "a: 2 # keep\n"


def _value(files: RepoFiles, path: str) -> object:
    node = node_at(files.parse(path).documents[0].root, ("a",))
    assert isinstance(node, YScalar)
    return node.value


def test_adopted_parse_is_reused_for_unchanged_bytes(tmp_path: Path) -> None:
    write_tree(tmp_path / "one", {"same.yaml": BEFORE})
    write_tree(tmp_path / "two", {"same.yaml": BEFORE})
    first = RepoFiles(tmp_path / "one", PathsConfig())
    second = RepoFiles(tmp_path / "two", PathsConfig())
    parsed = first.parse("same.yaml")
    second.adopt(first, changed=set())
    assert second.parse("same.yaml") is parsed


def test_changed_file_is_never_served_from_adopted_parses(tmp_path: Path) -> None:
    write_tree(tmp_path / "one", {"listed.yaml": BEFORE, "unlisted.yaml": BEFORE})
    write_tree(tmp_path / "two", {"listed.yaml": AFTER, "unlisted.yaml": AFTER})
    first = RepoFiles(tmp_path / "one", PathsConfig())
    second = RepoFiles(tmp_path / "two", PathsConfig())
    assert _value(first, "listed.yaml") == _value(first, "unlisted.yaml") == 1
    # one change declared, one not: both must be read from their new bytes
    second.adopt(first, changed={"listed.yaml"})
    assert _value(second, "listed.yaml") == 2
    assert _value(second, "unlisted.yaml") == 2
    assert second.parse("unlisted.yaml").raw == AFTER.encode()
    assert second.parse("unlisted.yaml") is not first.parse("unlisted.yaml")


def test_adopted_parse_is_not_served_once_the_file_changed(tmp_path: Path) -> None:
    write_tree(tmp_path / "one", {"late.yaml": BEFORE})
    write_tree(tmp_path / "two", {"late.yaml": BEFORE})
    first = RepoFiles(tmp_path / "one", PathsConfig())
    first.parse("late.yaml")
    second = RepoFiles(tmp_path / "two", PathsConfig())
    second.adopt(first, changed=set())
    (tmp_path / "two" / "late.yaml").write_text(AFTER)  # changed after adopting, before use
    assert _value(second, "late.yaml") == 2
