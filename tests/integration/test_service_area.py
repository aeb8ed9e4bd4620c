"""Jobs are posted where workers can be: worker positions live in Redis GEO, which indexes
latitudes within +-85.05112878 (its Web Mercator square), so a job beyond could never be
offered to anyone. POST /jobs refuses it (400 naming `location.lat`); right at the edge a job
is posted, and offered to the worker standing beside it.

Found from outside: jobs went to 90 degrees while no position could be reported above 85.05.
"""

from typing import Any

import pytest

from dispatch.db import Connection
from dispatch.fields import GEO_MAX_LAT
from tests.integration.conftest import Waves
from tests.support import BUSINESS, Api, job_body, make_worker, worker

EDGE = GEO_MAX_LAT


@pytest.mark.parametrize("lat", [85.0512, -85.0512, 89.98, 90.0, -90.0])
def test_a_job_beyond_the_reach_of_positions_is_refused(
    api: Api, conn: Connection, lat: float
) -> None:
    reply = api.call("POST", "/jobs", BUSINESS, job_body(lat=lat))
    assert (reply.status, reply.code) == (400, "VALIDATION_FAILED"), reply.body
    assert [d["field"] for d in reply.body["error"]["details"]] == ["location.lat"]
    assert conn.execute("SELECT count(*) AS n FROM jobs").fetchone() == {"n": 0}


@pytest.mark.parametrize("lat", [EDGE, -EDGE])
def test_a_job_at_the_edge_is_posted_and_offered_to_the_worker_beside_it(
    api: Api, conn: Connection, waves: Waves, lat: float
) -> None:
    from dispatch.offers.models import WaveRequest

    make_worker(api, worker("edge"))
    beside = lat - 0.001 if lat > 0 else lat + 0.001  # about 110 m from the job
    position = {"lat": beside, "lng": 10.0}
    assert api.call("PUT", "/workers/me/location", worker("edge"), position).status == 204
    reply = api.call("POST", "/jobs", BUSINESS, job_body(lat=lat, lng=10.0))
    assert reply.status == 201, reply.body
    job: dict[str, Any] = reply.body
    assert job["location"] == {"lat": lat, "lng": 10.0}
    waves.run(conn, WaveRequest(job_id=job["id"], version=1, wave=1))
    assert waves.offered() == ["worker-edge"]
