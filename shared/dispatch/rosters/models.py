"""What crosses the API for rosters."""

from enum import StrEnum
from typing import Any

from dispatch.models import Resource, Strict


class RosterList(StrEnum):
    FAVOURITE = "favourite"
    BLOCKED = "blocked"


class NoBody(Strict):
    """The body of a PUT on a roster: nothing (an empty body means {})."""


class RosterEntry(Resource):
    worker_id: str
    added_at: str  # RFC 3339, as the database writes every time


class Favourites(Resource):
    favourites: list[RosterEntry]

    def document(self) -> dict[str, Any]:
        return {"favourites": [e.document() for e in self.favourites]}


class Blocked(Resource):
    blocked: list[RosterEntry]

    def document(self) -> dict[str, Any]:
        return {"blocked": [e.document() for e in self.blocked]}
