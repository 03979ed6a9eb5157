"""The import rule of docs/architecture.md, checked by scanning every module's imports."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

BOT = Path(__file__).resolve().parent.parent / "bot"

ALLOWED: dict[str, set[str]] = {
    "model": {"model"},
    "redaction": set(),
    "nesting": set(),
    "lazy": set(),
    "clock": {"model"},
    "verification": {"model"},
    "config": {"model", "config", "lazy", "nesting"},
    "recommend": {
        "model",
        "clock",
        "recommend",
        "config.recommend",
        "config.base",
        "config.verify",
        "verification",
    },
    "metrics": {"model", "config", "metrics", "redaction", "lazy", "nesting"},
    "sim": {"model", "sim"},
    "manifests": {"model", "config.manifests", "config.repo", "manifests", "nesting"},
    "report": {"model", "clock", "report", "lazy", "nesting", "verification"},
    "forge": {"model", "report", "forge", "config.forge", "redaction", "verification"},
    "settings": {"model", "config", "manifests.quantities", "recommend.inputs", "settings"},
}
"""Package -> the ``bot.*`` modules it may import (prefix match). A package reads its own section
of ``config`` only (``recommend`` also ``config.verify``: the margins it compares a merged
proposal's outcome with); ``clock`` (wall-clock hours of epoch times) is a leaf both ``recommend`` and
``report`` read, so the replica slots and the week charts keep one clock; ``verification`` (a merged
proposal's verdict, as values) is a leaf ``recommend`` computes and ``report`` and ``forge``
show; the pipeline and the
face (``cli.py``, ``commands/``, ``serve.py``) read it all, and ``settings`` resolves every
effective setting from it (quantities parsed by ``manifests.quantities``; the engine's default
policy, a pure rule, from ``recommend.inputs``), so the others receive resolved values."""

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
    "ctypes",
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
            own = name == "bot.model" or name.startswith("bot.model.")
            assert top in sys.stdlib_module_names or top == "numpy" or own, f"{path} imports {name}"


COMPILED = {BOT / "metrics" / "xor_library.py", BOT / "metrics" / "xor_compiled.py"}
"""The one compiled part of the bot, the XOR-chunk decoder: ``xor_library.py`` loads it,
``xor_compiled.py`` calls it. Every other algorithm has one implementation, in numpy."""


def test_only_the_xor_decoder_calls_into_c():
    """``ctypes`` is used by the XOR-chunk decoder's two modules only, the loader imports only
    the standard library (``--version`` reads it), and the only C source is the decoder's."""
    users = {
        path
        for path in sorted(BOT.rglob("*.py"))
        if any(name.split(".")[0] == "ctypes" for name in _imports(path))
    }
    assert users == COMPILED, sorted(str(p.relative_to(BOT.parent)) for p in users)
    for name in _imports(BOT / "metrics" / "xor_library.py"):
        assert name.split(".")[0] in sys.stdlib_module_names, f"xor_library imports {name}"
    sources = sorted(str(p.relative_to(BOT.parent)) for p in BOT.parent.glob("bot/**/*.[ch]"))
    assert sources == ["bot/metrics/xor_chunks.c"]


def test_redaction_imports_only_stdlib():
    """Every package that holds a sink may use it, so it depends on nothing of the bot."""
    for name in _imports(BOT / "redaction.py"):
        assert name.split(".")[0] in sys.stdlib_module_names, f"redaction imports {name}"


def test_lazy_imports_only_stdlib_and_nothing_when_imported():
    """A package's lazy re-exports (``bot.lazy``) depend on nothing of the bot, and a package
    using them imports the names it re-exports only for type checking."""
    for name in _imports(BOT / "lazy.py"):
        assert name.split(".")[0] in sys.stdlib_module_names, f"lazy imports {name}"
    for package in ("config", "metrics", "report"):
        tree = ast.parse((BOT / package / "__init__.py").read_text())
        eager = [
            node.module
            for node in tree.body
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("bot.")
        ]
        assert eager == ["bot.lazy"], f"bot/{package}/__init__.py imports {eager}"


def test_recommend_does_no_io():
    bad = [
        f"{path.relative_to(BOT.parent)} imports {name}"
        for path in _modules("recommend")
        for name in _imports(path)
        if name.split(".")[0] in PURE_FORBIDDEN
    ]
    assert not bad, "\n".join(bad)


def test_the_clock_is_a_pure_leaf():
    """``recommend`` imports the clock, so it holds to ``recommend``'s rule (no I/O, no clock
    of its own, no randomness) and reads nothing of the bot but ``model``."""
    for name in _imports(BOT / "clock.py"):
        top = name.split(".")[0]
        assert top not in PURE_FORBIDDEN, f"clock imports {name}"
        assert top in sys.stdlib_module_names or top == "numpy" or name == "bot.model", name


def test_the_verdict_values_are_a_pure_leaf():
    """``verification`` holds the values of a merged proposal's verdict that ``recommend``
    computes and ``report`` shows: like ``model``, the standard library and ``model`` only."""
    for name in _imports(BOT / "verification.py"):
        top = name.split(".")[0]
        assert top not in PURE_FORBIDDEN, f"verification imports {name}"
        assert top in sys.stdlib_module_names or name == "bot.model", name


def _from_imports(path: Path) -> list[tuple[str, set[str]]]:
    """``(module, names)`` of every absolute ``from module import names`` in ``path``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        (node.module, {alias.name for alias in node.names})
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
    ]


RECOMMEND = BOT / "recommend"
VPA_ENTRY_POINTS = {"bot.recommend.vpa.recommender", "bot.recommend.vpa.limits"}
"""What of ``recommend/vpa/`` the rest of the bot may import: the recommender chain, wired once
(``logic/recommender.go``), and the limit proportions (the admission controller's part)."""
VPA_MAY_IMPORT = {"bot.model", "bot.config.recommend", "bot.recommend.vpa", "bot.recommend.errors"}
VPA_MAY_IMPORT |= {"bot.recommend.window", "bot.recommend.units"}
"""The VPA knows samples and settings, never Tortoise, the replay or the folding rules."""


def test_the_vpa_chain_is_driven_through_its_entry_point_only():
    bad = [
        f"{path.relative_to(BOT.parent)} imports {module}"
        for path in sorted(BOT.rglob("*.py"))
        if RECOMMEND / "vpa" not in path.parents
        for module, _ in _from_imports(path)
        if module.startswith("bot.recommend.vpa.") and module not in VPA_ENTRY_POINTS
    ]
    assert not bad, "\n".join(bad)


def test_the_vpa_knows_nothing_of_tortoise_replay_or_folding():
    bad = [
        f"{path.relative_to(BOT.parent)} imports {name}"
        for path in _modules("recommend/vpa")
        for name in _imports(path)
        if name.startswith("bot.")
        and not any(name == a or name.startswith(a + ".") for a in VPA_MAY_IMPORT)
    ]
    assert not bad, "\n".join(bad)


def test_nothing_in_recommend_imports_the_engine_back():
    """The engine is the top of ``recommend/``: its steps live in modules it imports."""
    bad = [
        str(path.relative_to(BOT.parent))
        for path in _modules("recommend")
        if path.name not in ("engine.py", "__init__.py")
        and "bot.recommend.engine" in _imports(path)
    ]
    assert not bad, "\n".join(bad)


def test_the_engine_stays_the_numbered_steps():
    lines = len((RECOMMEND / "engine.py").read_text().splitlines())
    assert lines <= 500, f"bot/recommend/engine.py has {lines} lines: move a step to its module"


SEAM_VALUES = (
    "POD_LEVEL",
    "ANY_CONTAINER",
    "REMOVE_METRIC",
    "EmergencyPhase",
    "EMERGENCY_PHASES",
    "FieldId",
)
"""Seam values defined once, in ``bot/model/``; every other module imports them."""

MODEL = BOT / "model"


def _in_model(path: Path) -> bool:
    return path.parent == MODEL


def _model_names() -> set[str]:
    return set().union(*(_assigned_names(path) for path in _modules("model")))


def _assigned_names(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        names |= {t.id for t in targets if isinstance(t, ast.Name)}
        if isinstance(node, ast.ClassDef):
            names.add(node.name)
    return names


def test_seam_values_are_defined_only_in_the_model():
    bad = [
        f"{path.relative_to(BOT.parent)} defines {name}"
        for path in BOT.rglob("*.py")
        if not _in_model(path)
        for name in sorted(_assigned_names(path) & set(SEAM_VALUES))
    ]
    assert not bad, "\n".join(bad)
    assert set(SEAM_VALUES) <= _model_names()


FIELD_TEXT_ENTRIES = {"commands/set_values.py"}
"""Modules where a field id enters the process as text (``set-values`` arguments); the other
entries (pull-request states, change ids, values mappings) read it through ``bot/model/``."""


def _field_text(path: Path) -> list[int]:
    """Lines of ``path`` that spell a field id (``"hpa.target.cpu"``, ``f"limits.{r}"``) as text;
    ``replicas`` is also a YAML key and is left out, docstrings are prose."""
    from bot.model import FieldId

    texts = {f.text for f in FieldId} - {"replicas"}
    tree = ast.parse(path.read_text())
    prose = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    heads = ("requests.", "limits.", "hpa.", "hpa.target.")
    spelled = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and id(node) not in prose and node.value in texts
    ]
    built = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.JoinedStr)
        and any(isinstance(v, ast.Constant) and str(v.value).endswith(heads) for v in node.values)
    ]
    return sorted(node.lineno for node in (*spelled, *built))


def test_field_ids_are_typed_not_text():
    """A field id is a ``FieldId`` member (``FieldId.hpa_target(resource)``, ``.is_limit``):
    no module builds, compares or parses its text except where it enters the process."""
    bad = [
        f"{path.relative_to(BOT.parent)}:{line}"
        for path in sorted(BOT.rglob("*.py"))
        if not _in_model(path) and str(path.relative_to(BOT)) not in FIELD_TEXT_ENTRIES
        for line in _field_text(path)
    ]
    assert not bad, "\n".join(bad)


FORGE_NEUTRAL = {
    "bot.forge.protocol",
    "bot.forge.publish",
    "bot.forge.results",
    "bot.forge.previous",
    "bot.forge.lifecycle",
    "bot.forge.branches",
    "bot.forge.errors",
}
"""The forge modules the pipeline may read: the ``Forge`` protocol, the forge-neutral
pull-request lifecycle that runs on it, and forge-neutral values."""


def test_the_pipeline_sees_the_forge_only_through_its_protocol():
    used = {m for path in _modules("pipeline") for m in _imports(path) if m.startswith("bot.forge")}
    assert used <= FORGE_NEUTRAL, sorted(used - FORGE_NEUTRAL)
    assert "bot.forge.protocol" in used


FORGE = BOT / "forge"
FORGE_CLIENTS = {"github", "requests"}
"""Third-party forge clients: only a forge's own package (``forge/github/``) imports them."""


def test_only_a_forge_package_reaches_its_client():
    """Checkout, schedule, dashboard rows and messages are any forge's; GitHub's client is
    imported under ``forge/github/`` only, so a second forge is a new package beside it."""
    bad = [
        f"{path.relative_to(BOT.parent)} imports {name}"
        for path in sorted(FORGE.glob("*.py"))
        for name in _imports(path)
        if name.split(".")[0] in FORGE_CLIENTS
    ]
    assert not bad, "\n".join(bad)


def test_the_publish_loop_and_every_forge_neutral_module_stay_off_any_forge():
    """``publish`` (list, observe, decide, order, reserve, act) and every module beside it run
    on the primitives of ``forge/protocol.py`` only: none imports GitHub's package
    (``bot.forge.github``) or its client (PyGithub's ``github``), so a second forge reuses them
    as they are."""
    neutral = sorted(FORGE.glob("*.py"))
    assert FORGE / "publish.py" in neutral
    bad = [
        f"{path.relative_to(BOT.parent)} imports {name}"
        for path in neutral
        for name in _imports(path)
        if name.split(".")[0] == "github"
        or name == "bot.forge.github"
        or name.startswith("bot.forge.github.")
    ]
    bad += [
        f"{path.relative_to(BOT.parent)} imports github from {module}"
        for path in neutral
        for module, names in _from_imports(path)
        if module in ("bot", "bot.forge") and "github" in names
    ]
    assert not bad, "\n".join(bad)


def test_the_publish_schedule_is_pure():
    """What ``publish`` decides before it writes (``forge/schedule.py``) reads plain values."""
    names = _imports(FORGE / "schedule.py")
    assert not [n for n in names if n.split(".")[0] in PURE_FORBIDDEN | FORGE_CLIENTS]
    assert {n for n in names if n.startswith("bot.")} <= {"bot.forge.lifecycle"}


UNITS = ("MIB", "GIB", "SECONDS_PER_HOUR", "SECONDS_PER_DAY")
"""Unit constants defined once, in ``bot/model/units.py``: the bot, its tests and benchmarks
import them."""


def test_unit_constants_are_defined_only_in_the_model():
    root = BOT.parent
    bad = [
        f"{path.relative_to(root)} defines {name}"
        for folder in ("bot", "tests", "benchmarks")
        for path in (root / folder).rglob("*.py")
        if path != MODEL / "units.py"
        for name in sorted(_assigned_names(path) & set(UNITS))
    ]
    assert not bad, "\n".join(bad)


def test_the_container_wildcards_are_named():
    """``*`` as a container name is ``POD_LEVEL`` or ``ANY_CONTAINER`` (``bot/model/units.py``); the
    other ``*`` are patterns (``manifests/globs.py``, ``forge/git.py``'s ref pattern) and
    pydantic's every-field validators."""
    patterns = (MODEL / "units.py", BOT / "manifests" / "globs.py", BOT / "forge" / "git.py")
    bad = []
    for path in sorted(BOT.rglob("*.py")):
        if path in patterns:
            continue
        tree = ast.parse(path.read_text())
        validators = {
            id(arg)
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "field_validator"
            for arg in node.args
        }
        bad += [
            f"{path.relative_to(BOT.parent)}:{node.lineno}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and node.value == "*" and id(node) not in validators
        ]
    assert not bad, "\n".join(bad)


def test_gitops_objects_are_read_from_the_checkout_only():
    """What the repository's Argo CD / Flux objects deploy is learnt from its files: no network,
    no process (a ``repoURL`` is compared, never fetched)."""
    for module in ("gitops", "deployments"):
        path = BOT / "manifests" / f"{module}.py"
        for name in _imports(path):
            top = name.split(".")[0]
            assert top not in {"subprocess", "socket", "urllib", "http", "requests"}, (
                f"manifests/{module}.py imports {name}"
            )


def test_the_preview_forge_reaches_no_network():
    """``run --dry-run --out`` promises no forge and no token: its forge (``forge/preview.py``)
    imports no network client, no process runner and nothing of a real forge's session."""
    names = _imports(FORGE / "preview.py")
    network = {"socket", "requests", "urllib", "http", "subprocess", "github"}
    bad = [n for n in names if n.split(".")[0] in network]
    bad += [n for n in names if n.startswith("bot.forge.github") or n == "bot.forge.checkout"]
    assert not bad, bad


BOUND_READERS = {BOT / "recommend" / "namespace.py", BOT / "recommend" / "inputs.py"}
"""Where the engine reads a container's ceilings (the node's allocatable, the namespace's
LimitRange and Pod room): the one clamp of ``bot.recommend.namespace``, and ``inputs`` that
fills them; the folding, the gate and the budget ask it, so no second clamp can drift."""


def test_request_ceilings_are_read_in_one_place():
    bad = []
    for path in _modules("recommend"):
        if path in BOUND_READERS:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in (
                "max_allocatable",
                "limit_range",
                "pod_room",
            ):
                bad.append(f"{path.relative_to(BOT.parent)}:{node.lineno}: .{node.attr}")
    assert not bad, "\n".join(bad)


MAX_MODULE_LINES = 500
"""The longest a module of ``bot/`` may be: one file per verb (split by verb when it grows)."""


def test_no_module_is_longer_than_the_limit():
    long = [
        f"{path.relative_to(BOT.parent)}: {lines} lines"
        for path in sorted(BOT.rglob("*.py"))
        if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    ]
    assert not long, "split these by verb:\n" + "\n".join(long)
