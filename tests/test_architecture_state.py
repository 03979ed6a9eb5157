"""``recommend/`` keeps nothing between calls, and every process-wide store is documented
(docs/architecture.md): checked by scanning what each function assigns and mutates."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.test_architecture import BOT, _modules

MUTATING_METHODS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "pop",
        "popitem",
        "remove",
        "clear",
        "add",
        "discard",
        "update",
        "setdefault",
        "appendleft",
        "popleft",
        "move_to_end",
        "difference_update",
        "intersection_update",
        "symmetric_difference_update",
    }
)
"""Methods that change a container in place."""

CACHE_DECORATORS = frozenset({"cache", "lru_cache"})
"""``functools`` decorators that keep a function's answers for the life of the process."""


def _decorator_name(node: ast.expr) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    return target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")


def _changed_names(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Names ``function`` changes in place or rebinds as globals; its own arguments and local
    names (bound in it without ``global``) are not module state."""
    changed: set[str] = set()
    declared: set[str] = set()
    bound = {
        a.arg for a in (*function.args.args, *function.args.kwonlyargs, *function.args.posonlyargs)
    }
    for node in ast.walk(function):
        if isinstance(node, ast.Global):
            declared |= set(node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in MUTATING_METHODS
            and isinstance(node.func.value, ast.Name)
        ):
            changed.add(node.func.value.id)
        elif (
            isinstance(node, ast.Subscript | ast.Attribute)
            and isinstance(node.ctx, ast.Store | ast.Del)
            and isinstance(node.value, ast.Name)
        ):
            changed.add(node.value.id)
    return declared | (changed - bound)


def process_state(path: Path) -> set[str]:
    """The names of ``path``'s module-level state: a module-level name that a function of the
    module changes (a mutating method, an item or attribute assignment or deletion, a ``global``
    rebinding) and every function whose answers ``functools.cache``/``lru_cache`` keep. A
    constant table the module never changes is not state."""
    tree = ast.parse(path.read_text(), filename=str(path))
    top: set[str] = set()
    cached: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            top |= {t.id for t in targets if isinstance(t, ast.Name)}
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and any(
            _decorator_name(d) in CACHE_DECORATORS for d in node.decorator_list
        ):
            cached.add(node.name)
    changed = {
        name
        for function in ast.walk(tree)
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
        for name in _changed_names(function)
    }
    return (changed & top) | cached


def test_recommend_keeps_no_state_between_calls():
    """``recommend/`` is pure: no module-level store a call fills and a later call reads, no
    kept answers, no thread-local scratch. What one workload's steps share is passed as values."""
    bad = [
        f"{path.relative_to(BOT.parent)}: {name}"
        for path in _modules("recommend")
        for name in sorted(process_state(path))
    ]
    assert not bad, "\n".join(bad)


def _documented_state() -> set[str]:
    """``module:name`` of every row of docs/architecture.md's "Process-wide state" table."""
    text = (BOT.parent / "docs" / "architecture.md").read_text()
    section = text.split("## Process-wide state", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `bot/")]
    return {row.split("`")[1] for row in rows}


def test_every_process_wide_store_is_documented_with_its_key_and_bound():
    """Outside ``recommend/`` a store that lives as long as the process is allowed only with a
    row in docs/architecture.md naming it, its key and its bound; a row names a live store."""
    found = {
        f"{path.relative_to(BOT.parent)}:{name}"
        for path in sorted(BOT.rglob("*.py"))
        for name in process_state(path)
    }
    documented = _documented_state()
    assert found <= documented, f"undocumented: {sorted(found - documented)}"
    assert documented <= found, f"documented but gone: {sorted(documented - found)}"


def test_the_state_check_sees_a_store(tmp_path):
    """The check above would fail on the shapes it forbids."""
    module = tmp_path / "m.py"
    module.write_text(
        "import functools, threading\n"
        "_KEPT = {}\n_SEEN = []\n_LOCAL = threading.local()\n_TABLE = {'a': 1}\n_N = 0\n"
        "def f(x):\n    _KEPT[x] = 1\n    _SEEN.append(x)\n    _LOCAL.value = x\n"
        "    global _N\n    _N += 1\n    return _TABLE['a']\n"
        "@functools.lru_cache(maxsize=8)\ndef g(x):\n    return x\n"
        "def h(_KEPT):\n    _KEPT.append(1)\n"
    )
    assert process_state(module) == {"_KEPT", "_SEEN", "_LOCAL", "_N", "g"}
