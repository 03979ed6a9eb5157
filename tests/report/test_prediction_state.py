"""The state of a pull request records the previous values and the prediction (version 2),
and a version-1 body still reads."""

from __future__ import annotations

from dataclasses import replace

from bot.model import Backtest, Prediction
from bot.report import parse_state, render_pull_request, state_of
from bot.report.prediction import prediction_from_json, prediction_json, prediction_of
from bot.report.proposal import MAX_STATE_CHANGES_CHARS, embed_state
from tests.report.replays import comparison, figures
from tests.report.test_render import proposal

V1_BODY = (
    'text\n<!-- tortoise-bot-state: {"changes":{"prod/shop/Deployment/web/app/requests.cpu":0.25},'
    '"files":"f","head":null,"human_noted":false,"key":"prod/shop/web","phases":{},'
    '"proposal":"p","v":1} -->\n'
)


def test_state_records_previous_values_and_the_prediction():
    p = proposal()
    state = state_of(p)
    ref = p.change_set.changes[0].ref
    assert state.version == 2
    assert state.previous == {
        f"{ref.key}/app/requests.cpu": 0.5,
        f"{ref.key}/app/requests.memory": 512 * 1024**2,
    }
    assert set(state.previous) == set(state.changes)
    predicted = state.predicted[ref.key]
    assert predicted.window_days == 14.0 and predicted.oom_kills == 0
    assert predicted.cpu_share == {"app": 0.0}
    _, body = render_pull_request(p)
    assert parse_state(body) == state


def test_prediction_reads_the_replay_of_the_proposed_values_and_the_backtest():
    rec = proposal().change_set.recommendations[0]
    replay = comparison()
    replay = replace(
        replay, proposed=figures(336.0, 672.0, over_request=403.2, oom_kills=2, shortfall=37.25)
    )
    bt = Backtest(trained_until_s=0.0, expected=(("app", 0.012345678),))
    found = prediction_of(replace(rec, replay=replay, backtest=bt))
    assert found == Prediction(
        window_days=14.0,
        cpu_share={"app": 0.01},
        oom_kills=2,
        shortfall_minutes=37.25,
        backtest_share={"app": 0.01235},
    )
    assert prediction_from_json(prediction_json(found)) == found
    assert prediction_of(replace(rec, replay=None)) is None


def test_a_version_1_body_still_reads_without_previous_values_or_prediction():
    state = parse_state(V1_BODY)
    assert state is not None and state.version == 1
    assert state.changes == {"prod/shop/Deployment/web/app/requests.cpu": 0.25}
    assert state.previous == {} and state.predicted == {}
    assert '"previous"' not in embed_state(state) and '"predicted"' not in embed_state(state)


def test_a_malformed_prediction_is_dropped_not_fatal():
    body = V1_BODY.replace('"v":1', '"v":2,"predicted":{"a":{"w":"x"},"b":{"w":7,"cpu":[1]}}')
    state = parse_state(body)
    assert state is not None
    assert state.predicted == {"b": Prediction(window_days=7.0)}


def test_predictions_are_dropped_first_when_the_state_would_be_too_large():
    p = proposal()
    rec = p.change_set.recommendations[0]
    many = tuple(
        replace(rec, ref=replace(rec.ref, name=f"w{i:05d}")) for i in range(2 + 20_000 // 60)
    )
    big = replace(p, change_set=replace(p.change_set, recommendations=many))
    state = state_of(big)
    assert state.changes and state.previous
    assert state.predicted == {}
    assert len(embed_state(state)) < MAX_STATE_CHANGES_CHARS + 1000
