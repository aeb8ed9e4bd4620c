"""A worker's offers: GET /workers/me/offers (the ones still open, newest first) and
POST /jobs/{job_id}/decline (never offered that job again; when everyone offered in a wave
has declined, the next wave goes out at once)."""

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body

from dispatch import db
from dispatch.auth import Role
from dispatch.errors import Code
from dispatch.http.keyed import KeyedResolver
from dispatch.http.openapi import KEYED_WRITE, SIGNED_IN, answers
from dispatch.http.resolver import entrypoint
from dispatch.models import ApiId, Resource
from dispatch.offers import inbox, rounds
from dispatch.offers.models import Declined, DeclineJob, Offers

app = KeyedResolver()
NO_BODY = DeclineJob()  # an empty body means {}


@app.endpoint(
    "GET",
    "/workers/me/offers",
    roles={Role.WORKER},
    operation_id="listMyOffers",
    responses=answers(200, Offers, *SIGNED_IN),
    summary="The offers made to me that are still open",
)
def my_offers() -> Response[Any]:
    worker = app.caller
    return app.answer(db.run(lambda conn: inbox.offers_of(conn, worker.id)))


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
