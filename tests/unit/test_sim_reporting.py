"""The contract's reporting rule as the simulated apps apply it (scenario `workers.rule`):
when a report is due, and how long an app may sleep before it looks again."""

import json
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


def test_the_evaluation_pairs_runs_job_by_job(
    tmp_path: Path,
) -> None:
    from sim.evaluate_reporting import Runs, paired

    def run(name: str, assigned: dict[str, float]) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        events: list[dict[str, str | float]] = [{"type": "replay"}]
        events += [{"t": 10.0 * n, "type": "job.created", "job_id": job}
                   for n, job in enumerate("abcd")]  # fmt: skip
        events += [{"t": t, "type": "job.assigned", "job_id": job} for job, t in assigned.items()]
        (folder / "replay-nearest.jsonl").write_text("\n".join(json.dumps(e) for e in events))
        return folder

    today = run("i", {"a": 5.0, "b": 30.0, "c": 40.0})
    rule = run("r", {"a": 3.0, "c": 22.0, "d": 31.0})
    found: Runs = {"town": {"interval.phase": {1: today}, "rule.phase": {1: rule}}}
    k = paired(found, "town", "interval.phase", "rule.phase")
    assert (k["only_first"], k["only_second"], k["both"]) == (1, 1, 2)  # b, d; a and c
    assert [t["p50"] for t in k["accept"]] == [12.5, 2.5]  # a 5 and c 20; a 3 and c 2


def test_the_rule_holds_within_todays_run_to_run_spread() -> None:
    from sim.evaluate_reporting import difference_interval, spread, verdict

    # Today: 1,000 jobs, 900 filled, their times to accept spread evenly over 0 to 90 s.
    today: list[float | None] = [n / 10 for n in range(900)] + [None] * 100
    room = spread(today)
    # Another run's 1,000 jobs of the same city: about sqrt(1000 x 0.9 x 0.1) = 9.5 jobs
    # filled more or fewer, and a p90 about 0.9 s away (0.01 x 90 s).
    assert 8.5 < room["filled"] < 10.5 and 0.6 < room["p90"] < 1.2
    assert verdict(today, today, room) == {"fill_rate": True, "p90": True}

    def unfilled(jobs: int) -> list[float | None]:
        return [None if n < jobs else t for n, t in enumerate(today)]

    def slower(seconds: float) -> list[float | None]:
        return [None if t is None else t + seconds for t in today]

    assert verdict(today, unfilled(5), room)["fill_rate"] is True  # within the spread
    assert verdict(today, unfilled(15), room)["fill_rate"] is False
    assert verdict(today, slower(0.5), room)["p90"] is True
    assert verdict(today, slower(2.0), room)["p90"] is False
    assert verdict(today, slower(-5.0), room) == {"fill_rate": True, "p90": True}  # better holds
    # The difference, the same jobs resampled both ways: a rule a second slower on every job
    # is a second slower on every resample.
    assert difference_interval(today, slower(1.0)) == pytest.approx((1.0, 1.0))


def test_the_idle_walk_is_the_same_however_often_the_city_looks() -> None:
    """Both ways of reporting must walk the same streets: where an idle worker is after ten
    minutes does not depend on whether the city asked every 30 s, at odd moments, or once,
    and the walk's turns leave the worker's own stream (its answers) untouched."""
    import random

    from sim.city import walk_about
    from sim.state import Worker
    from sim.world import distance_m, plan_workers

    plan = plan_workers(load(TINY))[0]

    def walked(looks: list[float]) -> Worker:
        worker = Worker(plan, random.Random("answers"), random.Random("walk"), plan.home)
        worker.heading = 40.0
        for since, until in zip([0.0, *looks], [*looks, 600.0], strict=True):
            walk_about(worker, since, until, speed_mps=0.6)
        return worker

    once = walked([])
    for looks in ([30.0 * k for k in range(1, 20)], [7.5, 61.0, 299.99, 300.0, 417.0, 599.0]):
        other = walked(looks)
        assert distance_m(other.position, once.position) < 1e-6, looks
        assert other.heading == pytest.approx(once.heading)
    assert 10 < distance_m(once.position, plan.home) <= 0.6 * 600 + 1e-6  # it walked, turning
    assert once.rng.random() == random.Random("answers").random()
