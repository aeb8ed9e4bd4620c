"""What goes in and out of the worker routes: profiles and reported positions."""

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
