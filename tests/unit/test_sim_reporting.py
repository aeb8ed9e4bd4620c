"""The contract's reporting rule as the simulated apps apply it (scenario `workers.rule`):
when a report is due, and how long an app may sleep before it looks again."""

from pathlib import Path

import pytest

from sim.scenario import CHECK_SECONDS, ReportingRule, Scenario, load

TINY = Path(__file__).parents[2] / "sim" / "scenarios" / "tiny.toml"

RULE = ReportingRule()  # the contract's: 250 m or 5 minutes, whichever comes first


def test_a_report_is_due_after_250_m_or_5_minutes_whichever_comes_first() -> None:
    assert (RULE.metres, RULE.seconds) == (250, 300)
    assert not RULE.due(since_s=299.9, moved_m=249.9)
    assert RULE.due(since_s=300.0, moved_m=0.0)  # the heartbeat, standing still
    assert RULE.due(since_s=5.0, moved_m=250.0)  # on the move, long before it
    assert RULE.due(since_s=float("inf"), moved_m=float("inf"))  # never reported


def test_a_report_restarts_the_rule() -> None:
    """What the app keeps is the last report, of any kind (a position message, or a pull that
    carried the position): from it, nothing is due again for 5 minutes or 250 m."""
    assert not RULE.due(since_s=0.0, moved_m=0.0)
    assert RULE.wait(since_s=0.0, moved_m=0.0, speed_mps=0.0) == 300


def test_the_app_sleeps_until_the_rule_could_fall_due_at_its_pace() -> None:
    assert RULE.wait(since_s=0.0, moved_m=0.0, speed_mps=0.6) == 300  # 250 m would take 417 s
    assert RULE.wait(since_s=0.0, moved_m=0.0, speed_mps=8.0) == pytest.approx(31.25)
    assert RULE.wait(since_s=270.0, moved_m=10.0, speed_mps=0.6) == pytest.approx(30)
    assert RULE.wait(since_s=0.0, moved_m=10.0, speed_mps=1.0) == pytest.approx(240)
    assert RULE.wait(since_s=20.0, moved_m=200.0, speed_mps=8.0) == pytest.approx(6.25)
    # Never sooner than a phone's location callback, even with nearly nothing left.
    assert RULE.wait(since_s=299.99, moved_m=0.0, speed_mps=0.0) == CHECK_SECONDS
    assert RULE.wait(since_s=1.0, moved_m=249.99, speed_mps=8.0) == CHECK_SECONDS


def test_the_rule_is_the_default_and_interval_reproduces_before_it() -> None:
    raw = load(TINY).model_dump()
    assert Scenario.model_validate(raw).workers.reporting == "rule"
    raw["workers"] |= {"reporting": "interval", "rule": {"metres": 100, "seconds": 30}}
    workers = Scenario.model_validate(raw).workers
    assert workers.reporting == "interval" and workers.rule.seconds == 30
    raw["workers"]["reporting"] = "sometimes"
    with pytest.raises(ValueError, match="reporting"):
        Scenario.model_validate(raw)
