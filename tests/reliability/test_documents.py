"""YAML that is big or partly broken: a large plain file is bounded by its size, never taken for
an alias bomb; one broken document of a multi-document file is reported with its line while the
others are read (and the file is never edited until it is fixed).
"""

from __future__ import annotations

from tests.reliability.hostile import deployment

PLAIN_ITEMS = 300_000
"""More nodes than ``MAX_EXPANDED_NODES`` (250,000), none of them an alias."""


def test_a_large_plain_file_is_not_an_alias_bomb(cli, tmp_path):
    big = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata:\n  items:\n"
    (tmp_path / "big.yaml").write_text(big + "    - 1\n" * PLAIN_ITEMS)
    (tmp_path / "deploy.yaml").write_bytes(deployment("shop"))
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    for level in "bcdefgh":
        previous = chr(ord(level) - 1)
        bomb += f"{level}: &{level} [{', '.join(['*' + previous] * 10)}]\n"
    (tmp_path / "bomb.yaml").write_text(bomb)

    small = cli("validate", str(tmp_path))
    assert "warning: big.yaml:0: file is 2400068 bytes, larger than the limit" in small.stdout

    (tmp_path / ".tortoise-bot.yaml").write_text("paths:\n  max_file_bytes: 100000000\n")
    raised = cli("validate", str(tmp_path))
    assert "big.yaml" not in raised.stdout, raised.stdout  # read, no error at all
    assert "Deployment/shop/web" in raised.stdout
    assert "warning: bomb.yaml:5: aliases expand to more than 250000 nodes (alias bomb?)" in (
        raised.stdout
    )


def test_one_broken_document_does_not_hide_the_others(cli, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    broken = b"---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: [oops\n"
    (repo / "all.yaml").write_bytes(
        deployment("shop", "web") + broken + b"---\n" + deployment("shop", "api")
    )
    (repo / "other.yaml").write_bytes(deployment("shop", "db"))
    listed = cli("validate", str(repo))
    assert listed.returncode == 0  # findings are warnings
    for name in ("web", "api", "db"):
        assert f"Deployment/shop/{name}@default" in listed.stdout
    assert "warning: all.yaml:21: invalid YAML" in listed.stdout, listed.stdout

    refused = cli("set", "--repo", str(repo), "--write", "Deployment/shop/api", "replicas=3")
    assert refused.returncode == 1
    assert "the file is read, never edited, until it is fixed" in refused.stderr
    assert b"[oops" in (repo / "all.yaml").read_bytes()  # untouched
    edited = cli("set", "--repo", str(repo), "--write", "Deployment/shop/db", "replicas=3")
    assert edited.returncode == 0, edited.stdout + edited.stderr
    assert "replicas: 3" in (repo / "other.yaml").read_text()
