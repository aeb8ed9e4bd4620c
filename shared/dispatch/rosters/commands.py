"""A business's own rosters: add, remove, list; and what the offer waves ask of them."""

import math
from typing import Any

from dispatch.db import Connection
from dispatch.errors import Code, DispatchError
from dispatch.rosters import sql
from dispatch.rosters.models import Blocked, Favourites, RosterEntry, RosterList
from dispatch.workers import locations

LISTED = 1000  # a roster longer than this is read in full by the waves, shown in part here


def add(conn: Connection, business_id: str, worker_id: str, roster: RosterList) -> RosterEntry:
    params: sql.OnListParams = {
        "business_id": business_id,
        "worker_id": worker_id,
        "list": roster.value,
    }
    statement = sql.ADD_FAVOURITE if roster is RosterList.FAVOURITE else sql.BLOCK
    row = statement.one(conn, params)
    if row is None:
        row = sql.ON_LIST.one(conn, params)  # already on it (a repeat)
        if row is None:
            raise DispatchError(Code.WORKER_BLOCKED)  # a favourite must be unblocked first
    return RosterEntry(worker_id=row["worker_id"], added_at=row["added_at"])


def remove(conn: Connection, business_id: str, worker_id: str, roster: RosterList) -> None:
    sql.REMOVE.run(conn, {"business_id": business_id, "worker_id": worker_id, "list": roster.value})


def listed(conn: Connection, business_id: str, roster: RosterList) -> Favourites | Blocked:
    rows = sql.LIST.all(conn, {"business_id": business_id, "list": roster.value, "limit": LISTED})
    entries = [RosterEntry(worker_id=r["worker_id"], added_at=r["added_at"]) for r in rows]
    if roster is RosterList.FAVOURITE:
        return Favourites(favourites=entries)
    return Blocked(blocked=entries)


def without_blocked(
    conn: Connection, business_id: str, near: list[tuple[str, Any]]
) -> list[tuple[str, Any]]:
    """A wave's candidates less those the job's business blocked."""
    if not near:
        return near
    blocked = {
        r["worker_id"]
        for r in sql.BLOCKED_AMONG.all(
            conn,
            {"business_id": business_id, "worker_ids": [worker_id for worker_id, _ in near]},
        )
    }
    return [candidate for candidate in near if candidate[0] not in blocked]


def favourites_of(conn: Connection, business_id: str) -> list[str]:
    return [r["worker_id"] for r in sql.FAVOURITES.all(conn, {"business_id": business_id})]


EARTH_M = 6371008.8  # the mean radius dispatch_distance_m uses


def favourites_near(
    conn: Connection, business_id: str, lat: float, lng: float, radius_m: float
) -> list[tuple[str, float]]:
    """Wave 0's candidates: the business's favourites with a fresh position within
    `radius_m` of the job, nearest first, (id, metres) as a wave's candidates are."""
    favourites = favourites_of(conn, business_id)
    if not favourites:
        return []
    found = []
    for worker_id, (at_lat, at_lng) in locations.fresh_positions(favourites).items():
        metres = _great_circle_m(lat, lng, at_lat, at_lng)
        if metres <= radius_m:
            found.append((worker_id, metres))
    return sorted(found, key=lambda candidate: candidate[1])


def _great_circle_m(lat1: float, lng1: float, lat2: float, lng2: float) -> float:
    p1, p2 = math.radians(lat1), math.radians(lat2)
    half = (
        math.sin((p2 - p1) / 2) ** 2
        + math.cos(p1) * math.cos(p2) * math.sin(math.radians(lng2 - lng1) / 2) ** 2
    )
    return 2 * EARTH_M * math.asin(min(1.0, math.sqrt(half)))
