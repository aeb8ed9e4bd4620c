"""The push sample's parts that need no sockets: who is sampled, and the bus's push rule."""

import json
from pathlib import Path

from dispatch_local.template import rule_pattern
from sim.push import sampled
from sim.scenario import Scenario, load
from sim.transport import Transport

TINY = Path(__file__).parents[2] / "sim" / "scenarios" / "tiny.toml"


def with_sample(n: int, seed: int = 3) -> Scenario:
    raw = load(TINY).model_dump()
    raw["workers"]["push_sample"], raw["seed"] = n, seed
    return Scenario.model_validate(raw)


def test_the_sample_is_the_seeds_and_its_size_the_scenarios() -> None:
    ids = [f"w-{n}" for n in range(40)]
    first = sampled(with_sample(10), ids)
    assert len(first) == 10 and first <= set(ids)
    assert sampled(with_sample(10), list(reversed(ids))) == first
    assert sampled(with_sample(10, seed=4), ids) != first


def test_the_push_rule_puts_the_products_events_on_the_push_queue_as_eventbridge_does() -> None:
    transport = Transport(visibility_seconds=60)
    push = transport.queues[Transport.PUSH]
    transport.bus.route(rule_pattern("PushQueue"), push)
    detail = {"id": "e-1", "type": "offer.created", "job_id": "j-1"}
    entry = {"Source": "dispatch.jobs", "DetailType": "offer.created", "Detail": json.dumps(detail)}
    transport.bus.put_events(Entries=[entry, {**entry, "Source": "someone.else"}])
    (message,) = push.take(10)
    body = json.loads(message.body)
    assert body["detail"] == detail and body["detail-type"] == "offer.created"
    assert body["source"] == "dispatch.jobs"
