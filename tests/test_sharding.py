"""run --shard I/N: a stable partition of the repositories."""

from __future__ import annotations

import pytest

from bot.sharding import Shard

REPOS = [f"org{i % 7}/repo-{i}" for i in range(400)]


def test_shards_partition_every_repository_exactly_once():
    shards = [Shard(i, 4) for i in range(4)]
    picked = [r for s in shards for r in s.select(REPOS)]
    assert sorted(picked) == sorted(REPOS)
    sizes = [len(s.select(REPOS)) for s in shards]
    assert min(sizes) > 60  # roughly balanced: 100 expected per shard


def test_assignment_is_stable_and_case_insensitive():
    assert Shard(1, 3).owns("Acme/Deploys") == Shard(1, 3).owns("acme/deploys")
    # sha256("acme/deploys")[:16] is a fixed number: the shard never changes between runs.
    first = [Shard(i, 5).owns("acme/deploys") for i in range(5)]
    assert first.count(True) == 1
    assert first == [Shard(i, 5).owns("acme/deploys") for i in range(5)]


def test_adding_repositories_never_moves_the_others():
    before = {r: next(i for i in range(4) if Shard(i, 4).owns(r)) for r in REPOS[:100]}
    after = {r: next(i for i in range(4) if Shard(i, 4).owns(r)) for r in REPOS}
    assert all(after[r] == shard for r, shard in before.items())


@pytest.mark.parametrize("text", ["4/4", "-1/2", "1", "a/b", "0/0"])
def test_bad_shard_is_rejected_with_the_expected_form(text):
    with pytest.raises(ValueError, match="--shard"):
        Shard.parse(text)


def test_parse():
    assert Shard.parse(" 2 / 8 ") == Shard(2, 8)
