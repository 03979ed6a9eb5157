"""Shared fixtures: paths to the project, the shared real-world fixtures and the console script."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent
NODE_MODULES = PROJECT / "node_modules"

SHARED_FIXTURES_ENV = "TORTOISE_BOT_SHARED_FIXTURES"
"""Where the external corpus is, instead of ``../shared/fixtures`` next to the checkout."""

REQUIRE_CORPUS_ENV = "TORTOISE_BOT_REQUIRE_CORPUS"
"""Set (CI sets it): the tests that read the corpus fail when it is absent, never skip."""

SHARED_FIXTURES = Path(
    os.environ.get(SHARED_FIXTURES_ENV) or PROJECT.parent / "shared" / "fixtures"
)
"""The external corpus of real-world manifests (``bash scripts/corpus`` fetches it)."""


def console_script() -> list[str]:
    """The installed ``tortoise-bot`` next to this interpreter, else ``python -m bot``."""
    exe = Path(sys.executable).with_name("tortoise-bot")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "bot"]


@pytest.fixture
def cli(tmp_path: Path):
    """Run the console script in a subprocess: ``cli("plan", "--demo")`` -> CompletedProcess."""

    def run(
        *args: str,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        input: str | None = None,
        timeout: float = 120,
    ) -> subprocess.CompletedProcess[str]:
        full_env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200", **(env or {})}
        return subprocess.run(
            [*console_script(), *args],
            cwd=cwd or tmp_path,
            env=full_env,
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    return run


CORPUS_ABSENT = "external corpus absent at"
"""How the skip of a test that reads the corpus begins (``shared_manifests``)."""


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Every skip for the absent corpus at one place, so ``-ra`` folds them into one line
    (``SKIPPED [12] tests/conftest.py:N: external corpus absent at …``), not one per test."""
    report = yield
    longrepr = getattr(report, "longrepr", None)
    if (
        report.skipped
        and isinstance(longrepr, tuple)
        and str(longrepr[2]).startswith(f"Skipped: {CORPUS_ABSENT}")
    ):
        report.longrepr = (__file__, corpus_manifests.__code__.co_firstlineno, longrepr[2])
    return report


def corpus_manifests() -> Path:
    """``../shared/fixtures/manifests``; absent, a skip saying how to get it, or a failure when
    ``REQUIRE_CORPUS_ENV`` is set (CI)."""
    path = SHARED_FIXTURES / "manifests"
    if not path.is_dir():
        message = (
            f"{CORPUS_ABSENT} {path}: `bash scripts/corpus` fetches it "
            f"(or set {SHARED_FIXTURES_ENV})"
        )
        if os.environ.get(REQUIRE_CORPUS_ENV):
            pytest.fail(f"{message}; {REQUIRE_CORPUS_ENV} is set")
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def shared_manifests() -> Path:
    """The external corpus (read in place, never copied into the project): the one way a test
    reads it (``corpus_manifests``)."""
    return corpus_manifests()


def require_binary(name: str) -> str:
    """Path of a binary the tests need; fail (not skip) when the set-up did not install it."""
    path = shutil.which(name)
    assert path, f"{name} not found: run scripts/setup (the README's test command installs it)"
    return path


@pytest.fixture(scope="session", autouse=True)
def render_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The suite's render cache: one directory for the session, never the user's ``~/.cache``
    (subprocesses inherit it)."""
    from bot.manifests.rendercache import CACHE_DIR_ENV

    path = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_DIR_ENV, str(path))
        yield path


@pytest.fixture(scope="session", autouse=True)
def bytecode_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Where the suite's subprocesses keep compiled bytecode (``PYTHONPYCACHEPREFIX``), as an
    installed package has it: the bot's modules are compiled once per session instead of in
    every process the suite starts, even where ``PYTHONDONTWRITEBYTECODE`` is set (removed for
    them). Nothing is written into the checkout."""
    path = tmp_path_factory.mktemp("pycache")
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
        patch.setenv("PYTHONPYCACHEPREFIX", str(path))
        yield path


SLOW = (
    "reliability/",  # faults, kills, hostile servers, serve for 200 runs
    "e2e/",  # whole runs against the GitHub emulator and a real Prometheus
    "forge/test_publish.py",  # the emulator, exact API call sequences
    "forge/test_publish_limits.py",
    "forge/test_emulator.py",
    "forge/test_state_between_runs.py",
    "manifests/test_shared_renders.py",  # kubectl kustomize on every overlay
    "manifests/test_render_property.py",
    "manifests/test_corpus.py",
    "manifests/test_rendercache.py",
    "manifests/test_commands.py",  # the CLI in a subprocess
    "recommend/test_command.py",
    "metrics/test_failures.py",  # a real Prometheus and faulty ones
    "metrics/test_doctor.py",  # two real Prometheus servers, whole plans
    "test_corpus_absent.py",  # pytest in a subprocess
    "test_plan_cli.py",
    "test_plan_bounds.py",  # simulate and plan the demo shop (and its kinds) in subprocesses
    "test_plan_init_containers.py",
    "test_plan_jobs.py",
    "test_plan_keda_cron.py",
    "test_plan_kinds.py",
    "test_plan_podlevel.py",
    "test_plan_unsupported.py",
    "test_snapshot_origin.py",
    "forge/test_plan_verification.py",  # plan against the emulator and a real Prometheus
    "test_try_it.py",
    "test_packaging.py",  # a wheel built and installed, actionlint
    "test_deploy_examples.py",  # kubectl kustomize on every Kubernetes example
)
"""Test folders and modules whose every test is ``slow``: whole commands in subprocesses,
servers, kubectl renders, killed processes, wheel builds. ``bash scripts/test -m "not slow"``
(the quick subset, README) leaves them out; the whole suite is the CI command."""


FIRST = (
    "reliability/test_serve_faults.py",  # 200 scheduled runs: about 2 minutes alone
    "reliability/test_killed_runs.py",
    "reliability/test_write_journal.py",
    "test_plan_cli.py",
    "reliability/test_concurrent_runs.py",
)
"""The modules with the longest tests, run first and in this order: with ``-n 2`` a test of minutes handed out
last keeps one process busy long after the other has finished."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tests = Path(__file__).resolve().parent
    rank = []
    for item in items:
        where = item.path.relative_to(tests).as_posix()
        if where.startswith(SLOW):
            item.add_marker(pytest.mark.slow)
        rank.append(FIRST.index(where) if where in FIRST else len(FIRST))
    # stable: the order within a module, and of the others, stays the collection's
    order = sorted(range(len(items)), key=rank.__getitem__)
    items[:] = [items[i] for i in order]
