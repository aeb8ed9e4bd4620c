"""What goes in and out of the worker routes: profiles and reported positions."""

from typing import Literal

from pydantic import Field

from dispatch.fields import GEO_MAX_LAT, Skills
from dispatch.models import Document, Strict


class WorkerProfileUpdate(Strict):
    skills: Skills


class WorkerProfile(Document):
    """A worker's profile as the skills' upsert writes it (dispatch.workers.profiles)."""

    id: str
    skills: list[str]
    rating: float | None


class WorkerPosition(Strict):
    """A reported position: a location within what Redis GEO can index."""

    lat: float = Field(ge=-GEO_MAX_LAT, le=GEO_MAX_LAT, strict=True)
    lng: float = Field(ge=-180, le=180, strict=True)


class PositionMessage(WorkerPosition):
    """A position sent on the worker's socket (`{"action": "position", ...}`): the template's
    PositionModel holds it at API Gateway, the same bounds (tests/integration/
    test_position_stream.py keeps them one), and the stream's consumer reads it with this."""

    action: Literal["position"]
