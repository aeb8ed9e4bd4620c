"""A business's rosters: PUT, DELETE and GET of /businesses/me/favourites and
/businesses/me/blocked. Each business reads and changes its own only (the path says "me")."""

from dataclasses import dataclass
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Path

from dispatch import db
from dispatch.auth import Role
from dispatch.errors import Code
from dispatch.http.openapi import SIGNED_IN, answers
from dispatch.http.resolver import DispatchResolver, entrypoint
from dispatch.rosters import commands
from dispatch.rosters.models import Blocked, Favourites, RosterEntry, RosterList

app = DispatchResolver()
# A change of a roster: latest wins, so the Idempotency-Key is required but not stored.
UNSTORED_WRITE = (
    Code.VALIDATION_FAILED,
    Code.IDEMPOTENCY_KEY_REQUIRED,
    Code.PAYLOAD_TOO_LARGE,
    *SIGNED_IN,
)
WorkerId = Annotated[str, Path(min_length=1, max_length=128, pattern=r"^[^\x00-\x1f\x7f-\x9f/]+$")]


@dataclass(frozen=True)
class Roster:
    """One roster's three routes: the same shape for favourites and for the blocked."""

    kind: RosterList
    path: str  # /businesses/me/<path>
    listing: type[Favourites | Blocked]
    put_refusals: tuple[Code, ...]  # why adding to this roster can be refused
    summaries: tuple[str, str, str]  # PUT, DELETE, GET
    operation_ids: tuple[str, str, str]  # PUT, DELETE, GET


ROSTERS = (
    Roster(
        RosterList.FAVOURITE,
        "favourites",
        Favourites,
        (Code.WORKER_BLOCKED,),
        (
            "Make a worker one of my favourites (idempotent)",
            "Remove a worker from my favourites (idempotent)",
            "My favourites",
        ),
        ("addFavourite", "removeFavourite", "listFavourites"),
    ),
    Roster(
        RosterList.BLOCKED,
        "blocked",
        Blocked,
        (),
        (
            "Block a worker from my jobs (idempotent; a favourite blocked is no favourite)",
            "Unblock a worker (idempotent)",
            "The workers I blocked",
        ),
        ("blockWorker", "unblockWorker", "listBlocked"),
    ),
)


def routes(roster: Roster) -> None:
    entry = f"/businesses/me/{roster.path}/<worker_id>"
    put_summary, delete_summary, get_summary = roster.summaries
    put_id, delete_id, get_id = roster.operation_ids

    @app.endpoint(
        "PUT",
        entry,
        roles={Role.BUSINESS},
        operation_id=put_id,
        stores_answers=False,
        responses=answers(200, RosterEntry, *UNSTORED_WRITE, *roster.put_refusals),
        summary=put_summary,
    )
    def put(worker_id: WorkerId) -> Response[Any]:
        business = app.caller
        return app.answer(
            db.run(lambda conn: commands.add(conn, business.id, worker_id, roster.kind))
        )

    @app.endpoint(
        "DELETE",
        entry,
        roles={Role.BUSINESS},
        operation_id=delete_id,
        stores_answers=False,
        responses=answers(204, None, *UNSTORED_WRITE),
        summary=delete_summary,
    )
    def delete(worker_id: WorkerId) -> Response[Any]:
        business = app.caller
        db.run(lambda conn: commands.remove(conn, business.id, worker_id, roster.kind))
        return Response(204)

    @app.endpoint(
        "GET",
        f"/businesses/me/{roster.path}",
        roles={Role.BUSINESS},
        operation_id=get_id,
        responses=answers(200, roster.listing, *SIGNED_IN),
        summary=get_summary,
    )
    def listed() -> Response[Any]:
        business = app.caller
        return app.answer(db.run(lambda conn: commands.listed(conn, business.id, roster.kind)))


for roster in ROSTERS:
    routes(roster)

lambda_handler = entrypoint(app)
