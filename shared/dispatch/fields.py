"""Field types the jobs and the workers share: a list of skills, and the latitudes a position
can have. Apart from dispatch.jobs.models, so that the workers' models and the position store
(workers, rosters: no route of theirs reads a job model) do not build the eighteen job models
at cold start."""

import unicodedata
from typing import Annotated

from pydantic import AfterValidator, Field
from pydantic_core import PydanticCustomError


def _distinct(skills: list[str]) -> list[str]:
    return list(dict.fromkeys(skills))


# Characters no one can see or that reorder what is seen (controls, zero-width and bidi format
# characters, lone surrogates, line and paragraph separators): two skills that look the same
# must be the same skill, so these are refused rather than stored.
_INVISIBLE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def _visible_nfc(skill: str) -> str:
    """A skill in NFC (so "café" composed and decomposed are one skill), refused when it holds
    a character one cannot see."""
    for char in skill:
        if unicodedata.category(char) in _INVISIBLE:
            raise PydanticCustomError(
                "skill_character",
                "holds an invisible or control character (U+{code}); a skill is visible text",
                {"code": f"{ord(char):04X}"},
            )
    return unicodedata.normalize("NFC", skill)


Skill = Annotated[
    str,
    Field(
        min_length=1,
        max_length=64,
        strict=True,
        description="Visible text, stored in Unicode NFC; control, format (zero-width, bidi), "
        "surrogate and line or paragraph separator characters are refused.",
    ),
    AfterValidator(_visible_nfc),
]
Skills = Annotated[list[Skill], Field(max_length=32), AfterValidator(_distinct)]


# Redis GEO indexes latitudes within +-85.05112878 (its Web Mercator square) and refuses the
# rest: no worker can report a position beyond it, so no job is posted there either (nobody
# could ever be offered it). Reads and searches take any latitude.
GEO_MAX_LAT = 85.05112878
