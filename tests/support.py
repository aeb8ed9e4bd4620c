"""Test helpers: invoking the Lambda handlers in-process with real events, and small factories."""

import asyncio
import concurrent.futures
import json
import math
import os
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

import boto3

from dispatch_local import photos, tokens
from dispatch_local.events import LambdaContext
from dispatch_local.gateway import deliver_batch
from dispatch_local.invoke import Api as Api
from dispatch_local.invoke import Reply as Reply
from dispatch_local.template import handler_of, queue_consumers

if TYPE_CHECKING:
    from psycopg.abc import Params, QueryNoTemplate

    from dispatch import db

# -- invoking handlers -------------------------------------------------------------------


Who = tuple[str, str]  # (sub, role)


def api_claims(sub: str, role: str) -> dict[str, str]:
    return tokens.as_api_gateway_claims({"sub": sub, "cognito:groups": [role]})


def rfc3339(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def window(hours_from_now: float = 2, length_hours: float = 2) -> dict[str, str]:
    start = datetime.now(UTC) + timedelta(hours=hours_from_now)
    return {"start": rfc3339(start), "end": rfc3339(start + timedelta(hours=length_hours))}


def window_ending_in(seconds: float) -> dict[str, str]:
    """A window that began an hour ago and ends `seconds` from now: time then passes for real."""
    now = datetime.now(UTC)
    return {
        "start": rfc3339(now - timedelta(hours=1)),
        "end": rfc3339(now + timedelta(seconds=seconds)),
    }


def job_body(
    skills: list[str] | None = None, lat: float = 12.9716, lng: float = 77.5946
) -> dict[str, Any]:
    return {"location": {"lat": lat, "lng": lng}, "skills": skills or ["wash"], "window": window()}


BUSINESS: Who = ("business-1", "business")
OPS: Who = ("ops-1", "ops")


def worker(n: int | str) -> Who:
    return (f"worker-{n}", "worker")


def make_worker(api: Api, who: Who, skills: list[str] | None = None) -> None:
    reply = api.call("PUT", "/workers/me", who, {"skills": skills or ["wash"]})
    assert reply.status == 200, reply.body


def make_job(
    api: Api,
    owner: Who = BUSINESS,
    skills: list[str] | None = None,
    when: dict[str, str] | None = None,
) -> dict[str, Any]:
    reply = api.call(
        "POST", "/jobs", owner, {**job_body(skills), **({"window": when} if when else {})}
    )
    assert reply.status == 201, reply.body
    job: dict[str, Any] = reply.body
    return job


T = TypeVar("T")


def in_parallel(calls: Sequence[Callable[[], T]]) -> list[T | BaseException]:
    """Run each call on its own thread, all released at the same instant by a barrier.

    An exception a call raises is returned in its place, so the caller sees every outcome.
    """
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = calls[i]()
        except BaseException as error:
            results[i] = error

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def returned(outcomes: list[T | BaseException]) -> list[T]:
    """What in_parallel's calls returned, when every one must have: the first exception one
    raised is raised again."""
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
    return [outcome for outcome in outcomes if not isinstance(outcome, BaseException)]


def upload_photo(api: Api, who: Who) -> str:
    """A photo slot for `who`, with a real upload to the S3 stand-in."""
    reply = api.call("POST", "/photos", who, {"content_type": "image/jpeg"})
    assert reply.status == 201, reply.body
    sent = photos.upload(reply.body, b"\xff\xd8\xff\xe0 not really a jpeg")
    assert sent.status_code in (200, 204), sent.text
    photo_id: str = reply.body["photo_id"]
    return photo_id


def step(api: Api, job: dict[str, Any], who: Who, event: str) -> dict[str, Any]:
    reply = api.call(
        "POST", f"/jobs/{job['id']}/transitions", who, {"event": event, "version": job["version"]}
    )
    assert reply.status == 200, reply.body
    moved: dict[str, Any] = reply.body
    return moved


def attach(api: Api, job: dict[str, Any], who: Who, slot: str) -> dict[str, Any]:
    photo = upload_photo(api, who)
    reply = api.call("PUT", f"/jobs/{job['id']}/photos/{slot}", who, {"photo_id": photo})
    assert reply.status == 200, reply.body
    attached: dict[str, Any] = reply.body
    return attached


def walk_to(
    api: Api,
    status: str,
    holder: Who,
    owner: Who = BUSINESS,
    when: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A job brought to `status` through the API, the way people would get it there."""
    job = make_job(api, owner, when=when)
    if status == "open":
        return job
    if status == "expired":
        end_window(job["id"])
        sweep_now()
        expired: dict[str, Any] = api.call("GET", f"/jobs/{job['id']}", OPS).body
        assert expired["status"] == "expired", expired
        return expired
    if status == "cancelled":
        return step(api, job, owner, "cancel")
    make_worker(api, holder)
    job = api.call("POST", f"/jobs/{job['id']}/accept", holder, {}).body
    job = attach(api, job, holder, "before")
    if status == "assigned":
        return job
    job = step(api, job, holder, "start")
    job = attach(api, job, holder, "after")
    if status == "in_progress":
        return job
    return step(api, job, holder, "complete")


def one(
    conn: "db.Connection", query: "QueryNoTemplate", params: "Params | None" = None
) -> dict[str, Any]:
    """The row a statement answers: it must answer one."""
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return row


def end_window(job_id: str) -> None:
    """Move a job's window into the past, as if its hours went by (the clock, not the job: the
    sweeper and the rules then do what they would at that hour). A lease ends with the window
    at the latest (jobs_lease_within_window), so a running one ends with it."""
    from dispatch import db

    # As the owner: the application role may never move a window (a job's window, place and
    # skills are fixed once posted; migration 0015).
    with db.connect(os.environ["DATABASE_OWNER_URL"]) as conn:
        conn.execute(
            """UPDATE jobs SET window_start = window_start - (window_end - now()) - interval '1 s',
                              window_end = now() - interval '1 s',
                              lease_expires_at = CASE WHEN lease_expires_at > now() - interval '1 s'
                                                      THEN now() - interval '1 s'
                                                      ELSE lease_expires_at END
                WHERE id = %s""",
            (job_id,),
        )


def sweep_now() -> dict[str, Any]:
    """The lease sweeper's scheduled run, as EventBridge Scheduler invokes it."""
    from dispatch_local.gateway import scheduled_event
    from dispatch_local.template import schedules

    (sweeper,) = (s for s in schedules() if s.function == "LeaseSweeperFunction")
    done: dict[str, Any] = handler_of(sweeper)(
        scheduled_event(sweeper), LambdaContext(function_name=sweeper.function, timeout_seconds=60)
    )
    return done


EARTH_M = 6371008.8


def destination(
    lat: float, lng: float, bearing_deg: float, metres: float, earth_m: float = EARTH_M
) -> tuple[float, float]:
    """The point `metres` away on the sphere (of radius `earth_m`), along `bearing_deg` from
    north."""
    d, b = metres / earth_m, math.radians(bearing_deg)
    p1, l1 = math.radians(lat), math.radians(lng)
    p2 = math.asin(math.sin(p1) * math.cos(d) + math.cos(p1) * math.sin(d) * math.cos(b))
    l2 = l1 + math.atan2(
        math.sin(b) * math.sin(d) * math.cos(p1), math.cos(d) - math.sin(p1) * math.sin(p2)
    )
    return math.degrees(p2), (math.degrees(l2) + 540) % 360 - 180


# -- queues and the bus (moto) -------------------------------------------------------


def consumer_of(queue: str) -> Callable[[dict[str, Any]], Any]:
    """The function the template subscribes to `queue` (a logical id), as Lambda calls it."""
    (consumer,) = (c for c in queue_consumers() if c.queue == queue)
    return lambda event: handler_of(consumer)(event, LambdaContext(function_name=consumer.function))


publisher = consumer_of("OutboxQueue")


def drain(
    url: str, consumer: Callable[[dict[str, Any]], Any] | None = None, rounds: int = 200
) -> None:
    """Deliver until the queue is empty (to the outbox publisher unless told), failed items
    retried at once (time passing). Empty means two empty receives 20 ms apart: moto does not
    yet show a message made visible again in the same millisecond (a flake, found on a fresh
    clone: a poison message stopped one receive short of its dead-letter queue)."""
    sqs = boto3.client("sqs")
    empty = 0
    for _ in range(rounds):
        handled = deliver_batch(
            sqs, url, 10, consumer or publisher, wait_seconds=0, retry_failed_now=True
        )
        empty = empty + 1 if handled == 0 else 0
        if empty == 2:
            return
        if handled == 0:
            time.sleep(0.02)
    raise AssertionError("the queue never drained")


def on_the_queue(url: str, rounds: int = 500) -> list[str]:
    """Take every message off a queue; their bodies, in the order received. Bounded: a queue
    that something keeps filling fails the test with what it held, instead of hanging it."""
    sqs, bodies = boto3.client("sqs"), list[str]()
    for _ in range(rounds):
        messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0).get(
            "Messages"
        )
        if not messages:
            return bodies
        bodies += [m["Body"] for m in messages]
        sqs.delete_message_batch(
            QueueUrl=url,
            Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)
            ],
        )
    raise AssertionError(
        f"{url} kept filling: {len(bodies)} messages taken, the last {bodies[-3:]}"
    )


def on_the_bus(tap: str) -> list[dict[str, Any]]:
    return [json.loads(body) for body in on_the_queue(tap)]


def run_async(coroutine: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run` in a thread of its own: after a browser test, Playwright's sync API leaves
    an event loop running in the main thread, where `asyncio.run` refuses to start."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
