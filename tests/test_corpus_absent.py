"""Without the external corpus, the tests that read it skip with one line (and fail when
``TORTOISE_BOT_REQUIRE_CORPUS`` is set, as in CI); a fresh clone thus passes its own tests."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import PROJECT, REQUIRE_CORPUS_ENV, SHARED_FIXTURES_ENV

CORPUS_TESTS = (
    "tests/manifests/test_corpus.py::test_every_file_round_trips_with_exact_spans",
    "tests/manifests/test_corpus.py::test_broken_overlays_are_reported_not_fatal",
    "tests/manifests/test_commands.py::test_validate_json_matches_the_schema_on_the_corpus",
)


def _pytest(tmp_path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k != REQUIRE_CORPUS_ENV}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", *CORPUS_TESTS],
        cwd=PROJECT,
        env={**clean, SHARED_FIXTURES_ENV: str(tmp_path / "absent"), **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_without_the_corpus_its_tests_skip_with_one_line(tmp_path):
    done = _pytest(tmp_path)
    assert done.returncode == 0, done.stdout[-3000:]
    skipped = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED")]
    assert len(skipped) == 1, done.stdout[-3000:]
    assert skipped[0].startswith("SKIPPED [3] tests/conftest.py:")
    assert f"external corpus absent at {tmp_path / 'absent' / 'manifests'}" in skipped[0]
    assert "bash scripts/corpus" in skipped[0]


def test_ci_requires_the_corpus(tmp_path):
    done = _pytest(tmp_path, **{REQUIRE_CORPUS_ENV: "1"})
    assert done.returncode == 1
    assert "3 errors" in done.stdout or "3 failed" in done.stdout, done.stdout[-3000:]
    assert f"{REQUIRE_CORPUS_ENV} is set" in done.stdout
