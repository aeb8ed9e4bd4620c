"""SnapStart: before the snapshot, every connection an environment holds is dropped (one
snapshot is restored into many environments, each of which must connect on its own), and the
next request after a restore connects again and works."""

import redis
import snapshot_restore_py

from dispatch import aws, db
from dispatch.workers import locations
from tests.support import Api, make_job, make_worker, worker


def take_snapshot() -> None:
    """What the Lambda runtime does before it takes the snapshot: every registered hook."""
    for hook, args, kwargs in snapshot_restore_py.get_before_snapshot():
        hook(*args, **kwargs)


def test_before_the_snapshot_no_connection_is_kept_and_after_it_requests_work(
    api: Api, cache: redis.Redis
) -> None:
    make_worker(api, worker(1))
    job = make_job(api)  # its events relayed to SQS: an AWS client now exists
    assert (
        api.call("PUT", "/workers/me/location", worker(1), {"lat": 12.97, "lng": 77.59}).status
        == 204
    )
    held = db.connection()
    assert aws.client.cache_info().currsize and locations.client.cache_info().currsize

    take_snapshot()

    assert held.closed, "the database connection went into the snapshot"
    assert not aws.client.cache_info().currsize and not locations.client.cache_info().currsize
    accepted = api.call("POST", f"/jobs/{job['id']}/accept", worker(1), {})
    assert accepted.status == 200, accepted.body
    assert (
        api.call("PUT", "/workers/me/location", worker(1), {"lat": 12.98, "lng": 77.59}).status
        == 204
    )
    assert db.connection() is not held
