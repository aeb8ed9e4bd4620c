"""A worker's offers: GET /workers/me/offers (the ones still open, newest first) and
POST /jobs/{job_id}/decline (never offered that job again; when everyone offered in a wave
has declined, the next wave goes out at once)."""

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query

from dispatch import db
from dispatch.auth import Role
from dispatch.errors import Code, DispatchError
from dispatch.fields import GEO_MAX_LAT
from dispatch.http.keyed import KeyedResolver
from dispatch.http.openapi import KEYED_WRITE, SIGNED_IN, answers
from dispatch.http.resolver import entrypoint
from dispatch.models import ApiId, Resource
from dispatch.offers import inbox, rounds
from dispatch.offers.models import Declined, DeclineJob, Offers
from dispatch.workers import locations

app = KeyedResolver()
NO_BODY = DeclineJob()  # an empty body means {}


@app.endpoint(
    "GET",
    "/workers/me/offers",
    roles={Role.WORKER},
    operation_id="listMyOffers",
    responses=answers(200, Offers, *SIGNED_IN, Code.VALIDATION_FAILED),
    summary="The offers made to me that are still open",
)
def my_offers(
    lat: Annotated[float | None, Query(ge=-GEO_MAX_LAT, le=GEO_MAX_LAT)] = None,
    lng: Annotated[float | None, Query(ge=-180, le=180)] = None,
) -> Response[Any]:
    """With `lat` and `lng` (where I am), the read is also my position report."""
    worker = app.caller
    if (lat is None) != (lng is None):
        missing = "query.lat" if lat is None else "query.lng"
        problem = "lat and lng come together (where I am) or not at all"
        raise DispatchError(Code.VALIDATION_FAILED, [{"field": missing, "problem": problem}])
    offers = db.run(lambda conn: inbox.offers_of(conn, worker.id))
    if lat is not None and lng is not None:
        locations.report_with_a_read(worker.id, lat, lng)
    return app.answer(offers)


@app.endpoint(
    "POST",
    "/jobs/<job_id>/decline",
    roles={Role.WORKER},
    operation_id="declineJob",
    responses=answers(200, Declined, *KEYED_WRITE, Code.NOT_FOUND),
    summary="Decline an offer",
)
def decline(job_id: ApiId, _: Annotated[DeclineJob, Body()] = NO_BODY) -> Response[Any]:
    worker = app.caller
    return app.answered(
        lambda conn, key: inbox.decline(conn, job_id, worker.id, key), then=hurry_the_next_wave
    )


def hurry_the_next_wave(declined: Resource) -> None:
    assert isinstance(declined, Declined)
    rounds.send_now_if_all_declined(declined.job_id)


lambda_handler = entrypoint(app)
