"""The import rule of docs/architecture.md, checked by scanning every module's imports."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

BOT = Path(__file__).resolve().parent.parent / "bot"

ALLOWED: dict[str, set[str]] = {
    "model": set(),
    "redaction": set(),
    "config": {"model", "config"},
    "recommend": {"model", "recommend", "config.recommend", "config.base"},
    "metrics": {"model", "config", "metrics", "redaction"},
    "sim": {"model", "sim"},
    "manifests": {"model", "config", "manifests"},
    "report": {"model", "report"},
    "forge": {"model", "report", "forge", "config", "redaction"},
}
"""Package -> the ``bot.*`` modules it may import (prefix match)."""

PURE_FORBIDDEN = {
    "os",
    "io",
    "pathlib",
    "subprocess",
    "socket",
    "requests",
    "logging",
    "time",
    "random",
    "shutil",
    "tempfile",
    "urllib",
    "http",
    "github",
    "prometheus_api_client",
}
"""Standard and third-party modules that mean I/O, a clock or randomness: never in recommend."""


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def _modules(package: str) -> list[Path]:
    target = BOT / package
    return sorted(target.rglob("*.py")) if target.is_dir() else [BOT / f"{package}.py"]


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_package_imports_only_what_it_may(package):
    bad = []
    for path in _modules(package):
        for name in _imports(path):
            if not name.startswith("bot."):
                continue
            inner = name.removeprefix("bot.")
            if not any(inner == a or inner.startswith(a + ".") for a in ALLOWED[package]):
                bad.append(f"{path.relative_to(BOT.parent)} imports {name}")
    assert not bad, "\n".join(bad)


def test_model_imports_only_stdlib_and_numpy():
    for path in _modules("model"):
        for name in _imports(path):
            top = name.split(".")[0]
            assert top in sys.stdlib_module_names or top == "numpy", f"{path} imports {name}"


def test_redaction_imports_only_stdlib():
    """Every package that holds a sink may use it, so it depends on nothing of the bot."""
    for name in _imports(BOT / "redaction.py"):
        assert name.split(".")[0] in sys.stdlib_module_names, f"redaction imports {name}"


def test_recommend_does_no_io():
    bad = [
        f"{path.relative_to(BOT.parent)} imports {name}"
        for path in _modules("recommend")
        for name in _imports(path)
        if name.split(".")[0] in PURE_FORBIDDEN
    ]
    assert not bad, "\n".join(bad)
