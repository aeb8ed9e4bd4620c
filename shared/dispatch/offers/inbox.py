"""A worker's side of offers: pull the ones still open, say no to one.

Push is a hint (a notification may never arrive); pulling is the truth: the offers whose job
is still open in the round that made them. A decline is recorded for good (the job is never
offered to that worker again), and when everyone offered in a wave has declined, the next wave
goes out at once instead of waiting out the interval (`DISPATCH_OFFER_NEXT_WAVE_ON_DECLINES`).
"""

from uuid import UUID

from dispatch.config.offers import offer_settings
from dispatch.db import Connection
from dispatch.errors import Code, DispatchError
from dispatch.idempotency import KeyedRequest, answering
from dispatch.offers import sql
from dispatch.offers.models import Declined, Offer, Offers, WaveRequest

OFFERS_SHOWN = 100  # the newest; a worker holds far fewer open offers at once


def offers_of(conn: Connection, worker_id: str) -> Offers:
    rows = sql.OFFERS_OF_WORKER.all(conn, {"worker_id": worker_id, "limit": OFFERS_SHOWN})
    return Offers(offers=[Offer.from_document(row["document"]) for row in rows])


def decline(
    conn: Connection, job_id: UUID, worker_id: str, key: KeyedRequest | None = None
) -> Declined:
    declined = Declined(job_id=job_id)
    params: sql.DeclineParams = {
        "job_id": job_id,
        "worker_id": worker_id,
        "answer": declined.to_json(),
        **answering(key, 200),
    }
    found = sql.DECLINE.one(conn, params)
    if not (found and found["found"]):
        raise DispatchError(Code.NOT_FOUND)
    return declined


def next_wave_if_all_declined(conn: Connection, job_id: UUID) -> WaveRequest | None:
    """The wave to send now, when every worker offered in the round's latest wave declined."""
    if not offer_settings().offer_next_wave_on_declines:
        return None
    row = sql.WAVE_ALL_DECLINED.one(conn, {"job_id": job_id})
    if row is None:
        return None
    return WaveRequest(job_id=job_id, version=row["version"], wave=row["wave"] + 1)
