"""What the ops routes take and answer."""

import math
from typing import Any

from dispatch.events import Event
from dispatch.jobs.models import Job, JobLocation
from dispatch.models import Model, Resource

# The widest box the map may ask for, in degrees each way (a metro area and its outskirts).
MAX_BOX_DEGREES = 2.0


class Box(Model):
    """minLng,minLat,maxLng,maxLat: the map's view."""

    min_lng: float
    min_lat: float
    max_lng: float
    max_lat: float

    @classmethod
    def parse(cls, text: str) -> "Box":
        """ValueError (named in the 400's details) unless it is four numbers in range, the
        corners in order, and no wider than MAX_BOX_DEGREES."""
        parts = text.split(",")
        if len(parts) != 4:
            raise ValueError("must be four numbers: minLng,minLat,maxLng,maxLat")
        try:
            min_lng, min_lat, max_lng, max_lat = (float(p) for p in parts)
        except ValueError:
            raise ValueError("must be four numbers: minLng,minLat,maxLng,maxLat") from None
        if not all(math.isfinite(v) for v in (min_lng, min_lat, max_lng, max_lat)):
            raise ValueError("must be finite numbers")
        if not (-180 <= min_lng <= 180 and -180 <= max_lng <= 180):
            raise ValueError("longitudes must lie within -180 and 180")
        if not (-90 <= min_lat <= 90 and -90 <= max_lat <= 90):
            raise ValueError("latitudes must lie within -90 and 90")
        if min_lng >= max_lng or min_lat >= max_lat:
            raise ValueError("the first corner must be south-west of the second")
        if max_lng - min_lng > MAX_BOX_DEGREES or max_lat - min_lat > MAX_BOX_DEGREES:
            raise ValueError(f"may span at most {MAX_BOX_DEGREES:g} degrees each way")
        return cls(min_lng=min_lng, min_lat=min_lat, max_lng=max_lng, max_lat=max_lat)


class OpsJobs(Resource):
    jobs: list[Job]

    def document(self) -> dict[str, Any]:
        return {"jobs": [job.document() for job in self.jobs]}


class WorkerOnMap(Resource):
    id: str
    location: JobLocation
    seen_at: str  # RFC 3339
    busy: bool


class OpsWorkers(Resource):
    workers: list[WorkerOnMap]


class EventPage(Resource):
    """Events in the order written; `cursor` asks for the ones after the last of them."""

    events: list[Event]
    cursor: str

    def document(self) -> dict[str, Any]:
        return {"events": [e.document() for e in self.events], "cursor": self.cursor}


class Percentiles(Model):
    p50: float | None
    p90: float | None


class Summary(Resource):
    """The marketplace now, and its last hour."""

    jobs_by_status: dict[str, int]
    filled_last_hour: int
    unfilled_last_hour: int
    time_to_accept_last_hour_s: Percentiles
    leases_expiring_in_5_minutes: int
    relay_lag_s: float
