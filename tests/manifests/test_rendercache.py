"""The render cache: an unchanged repository is read from it, any changed input renders again
(real ``kubectl kustomize``), a bad entry is ignored, concurrent writers never leave a torn one."""

from __future__ import annotations

import os
import shutil
import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from bot.config.repo import RepoConfig
from bot.manifests import discover, rendercache
from bot.manifests.rendercache import (
    CACHE_DIR_ENV,
    CACHE_MIB_ENV,
    IDENTITY_FILE,
    RenderCache,
    render_cache,
)
from bot.model import Inventory
from tests.conftest import require_binary
from tests.manifests.conftest import workload, write_tree
from tests.manifests.test_kustomize import BASE_DEPLOYMENT, PROD_PATCH

SHOP = {
    "base/kustomization.yaml": "resources: [api.yaml]\n",
    "base/api.yaml": BASE_DEPLOYMENT,
    "overlays/prod/kustomization.yaml": (
        "namespace: prod\nresources: [../../base]\npatches:\n  - path: api.yaml\n"
    ),
    "overlays/prod/api.yaml": PROD_PATCH,
}
"""One overlay with a patch over a base: one render."""


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> RenderCache:
    """An empty render cache of this test's own, the one discovery uses."""
    require_binary("kubectl")
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(CACHE_MIB_ENV, raising=False)
    found = render_cache()
    assert found is not None
    return found


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    write_tree(root, SHOP)
    return root


def prod_cpu(inventory: Inventory) -> float | None:
    assert not inventory.errors, inventory.errors
    return workload(inventory, "api", "overlays/prod").container("api").requests.cpu_cores


def entries(cache: RenderCache) -> list[Path]:
    return sorted(cache.directory.glob("*.json"))


def test_unchanged_repository_is_read_from_the_cache_and_one_changed_byte_renders_again(
    cache, shop, tmp_path
):
    first = discover(shop, RepoConfig()).inventory
    assert (cache.stats.misses, cache.stats.hits, cache.stats.stored) == (1, 0, 1)
    assert prod_cpu(first) == 0.5

    clone = tmp_path / "clone"  # the next run's fresh checkout of the same commit
    shutil.copytree(shop, clone)
    assert discover(clone, RepoConfig()).inventory == first
    assert (cache.stats.hits, cache.stats.stored) == (1, 1)

    patch = clone / "overlays/prod/api.yaml"
    patch.write_text(patch.read_text().replace("cpu: 500m", "cpu: 600m"))  # one byte
    assert prod_cpu(discover(clone, RepoConfig()).inventory) == 0.6
    assert (cache.stats.hits, cache.stats.misses, cache.stats.stored) == (1, 2, 2)

    base = clone / "base/api.yaml"  # a file of the base, read through the overlay
    base.write_text(base.read_text().replace("memory: 128Mi", "memory: 129Mi"))
    changed = discover(clone, RepoConfig()).inventory
    assert workload(changed, "api", "overlays/prod").container("api").requests.memory_bytes == (
        129 * 2**20
    )
    assert (cache.stats.hits, cache.stats.stored) == (1, 3)
    assert len(entries(cache)) == 3


def test_another_kubectl_version_renders_again(cache, shop, tmp_path, monkeypatch):
    real = require_binary("kubectl")
    discover(shop, RepoConfig())
    assert cache.stats.stored == 1
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    other = bin_dir / "kubectl"  # the same kustomize, reporting another version
    other.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = version ]; then echo \'{"clientVersion": {"gitVersion": "v1.99.0"}}\'; '
        f'exit 0; fi\nexec {real} "$@"\n'
    )
    other.chmod(other.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    discover(shop, RepoConfig())
    assert (cache.stats.hits, cache.stats.stored) == (0, 2)
    discover(shop, RepoConfig())
    assert cache.stats.hits == 1  # the new version's own entry


def test_kubectl_is_asked_its_version_once_per_binary_across_runs(
    cache, shop, tmp_path, monkeypatch
):
    real = require_binary("kubectl")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    asked = tmp_path / "asked"
    wrapper = bin_dir / "kubectl"  # the real kubectl, counting the version questions
    script = f'#!/bin/sh\n[ "$1" = version ] && echo >> {asked}\nexec {real} "$@"\n'
    wrapper.write_text(script)
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")

    def next_run() -> Inventory:  # a new process: only what the cache directory holds
        monkeypatch.setattr(rendercache, "_IDENTITIES", {})
        return discover(shop, RepoConfig()).inventory

    first = next_run()
    assert (cache.directory / IDENTITY_FILE).is_file()
    assert next_run() == first
    assert (asked.read_text().count("\n"), cache.stats.hits) == (1, 1)
    wrapper.write_text(script)  # the binary rewritten (an upgrade): asked again
    assert next_run() == first
    (cache.directory / IDENTITY_FILE).write_text("{")  # unreadable: asked again
    assert next_run() == first
    assert (asked.read_text().count("\n"), cache.stats.hits) == (3, 3)


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],  # torn
        lambda data: b"\x00\xff not json",
        lambda data: data.replace(b'"key": "', b'"key": "0'),  # another key's entry
        lambda data: b'{"format": "something else", "documents": []}',
    ],
    ids=["truncated", "garbage", "wrong-key", "other-format"],
)
def test_a_bad_entry_is_ignored_and_rendered_again(cache, shop, damage):
    good = discover(shop, RepoConfig()).inventory
    (entry,) = entries(cache)
    entry.write_bytes(damage(entry.read_bytes()))
    assert discover(shop, RepoConfig()).inventory == good
    assert (cache.stats.ignored, cache.stats.hits, cache.stats.stored) == (1, 0, 2)
    assert discover(shop, RepoConfig()).inventory == good  # rewritten whole
    assert cache.stats.hits == 1


def test_a_build_reading_what_the_key_cannot_follow_is_never_cached(cache, tmp_path):
    outside = tmp_path / "outside"  # a base outside the checkout, reached by `../`
    write_tree(outside, {"kustomization.yaml": "resources: [api.yaml]\n", "api.yaml": ""})
    (outside / "api.yaml").write_text(BASE_DEPLOYMENT)
    patch = PROD_PATCH.replace("cpu: 500m # prod needs more", "cpu: 700m")
    root = tmp_path / "repo"
    write_tree(
        root,
        {
            "outer/kustomization.yaml": "resources: [../../outside]\n",
            "plugin/kustomization.yaml": "resources: [api.yaml]\ntransformers: [patcher.yaml]\n",
            "plugin/api.yaml": BASE_DEPLOYMENT,
            "plugin/patcher.yaml": (
                "apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: p}\n"
                "path: more.yaml\ntarget: {kind: Deployment}\n"
            ),
            "plugin/more.yaml": patch,  # named by the plugin only
        },
    )

    def plugin_cpu() -> float | None:
        found = discover(root, RepoConfig()).inventory
        return workload(found, "api", "plugin").container("api").requests.cpu_cores

    assert plugin_cpu() == 0.7
    (root / "plugin/more.yaml").write_text(patch.replace("700m", "800m"))
    assert plugin_cpu() == 0.8
    assert (cache.stats.stored, cache.stats.hits) == (0, 0)  # nor the render of `outer`


def test_concurrent_writers_leave_whole_entries(tmp_path):
    cache = RenderCache(tmp_path / "cache", 2**30)
    variants = [[{"kind": "Deployment", "n": n, "pad": "x" * 200_000}] for n in range(4)]

    def hammer(n: int) -> list[object]:
        seen: list[object] = []
        for _ in range(10):
            cache.store("k" * 64, variants[n % 4])
            seen.append(cache.load("k" * 64))
        return seen

    with ThreadPoolExecutor(max_workers=8) as pool:
        loads = [doc for seen in pool.map(hammer, range(8)) for doc in seen]
    assert all(doc in variants for doc in loads)
    assert cache.stats.ignored == 0
    assert [p.name for p in cache.directory.iterdir()] == ["k" * 64 + ".json"]  # no temp left


def test_least_recently_used_entries_are_evicted_past_the_bound(tmp_path):
    documents = [{"kind": "Deployment", "pad": "x" * 1000}]
    cache = RenderCache(tmp_path / "cache", 2**20)
    for n, key in enumerate("abc"):
        cache.store(key, documents)
        os.utime(cache.directory / f"{key}.json", ns=(n * 10**9, n * 10**9))
    cache.max_bytes = sum(p.stat().st_size for p in entries(cache))  # three fit, not four
    assert cache.load("a") == documents  # used: now the most recent
    cache.store("d", documents)
    assert sorted(p.stem for p in entries(cache)) == ["a", "c", "d"]
    assert cache.stats.evicted == 1
    assert sum(p.stat().st_size for p in entries(cache)) <= cache.max_bytes


def test_the_cache_is_off_at_zero_mib(monkeypatch, tmp_path):
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path))
    monkeypatch.setenv(CACHE_MIB_ENV, "0")
    assert render_cache() is None
