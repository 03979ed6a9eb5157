"""The order a run serves repositories in after a run that stopped early (``bot.resume``)."""

from __future__ import annotations

from bot.resume import load_not_reached, resume_order, save, state_path
from bot.sharding import Shard


def test_the_repositories_not_finished_come_first_and_the_state_round_trips(tmp_path):
    path = state_path(tmp_path / "state", Shard(1, 4))
    assert path.name == "run-shard-1-of-4.json" and load_not_reached(path) == ()
    save(path, ["o/c", "o/gone", "o/d"], stopped="budget")
    assert load_not_reached(path) == ("o/c", "o/gone", "o/d")
    # a repository no longer served is dropped, a new one comes with the rest
    assert resume_order(["o/a", "o/b", "o/c", "o/d", "o/new"], load_not_reached(path)) == [
        "o/c",
        "o/d",
        "o/a",
        "o/b",
        "o/new",
    ]
    save(path, [], stopped=None)
    assert load_not_reached(path) == () and [p.name for p in path.parent.iterdir()] == [path.name]


def test_an_unreadable_state_is_named_and_the_usual_order_kept(tmp_path, caplog):
    path = tmp_path / "run.json"
    for text in ("{not json", '["o/a"]', '{"version": 99, "not_reached": ["o/b"]}'):
        path.write_text(text)
        assert load_not_reached(path) == ()
    assert caplog.text.count(str(path)) == 3
