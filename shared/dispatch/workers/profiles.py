"""Worker profiles (skills, rating). Locations never live here: they go to Redis."""

from typing import TypedDict

from dispatch.db import Answering, Connection, Query
from dispatch.idempotency import KeyedRequest, answering
from dispatch.workers.models import WorkerProfile, WorkerProfileUpdate


class SetSkillsParams(Answering):
    worker_id: str
    skills: list[str]


class ProfileAnswer(TypedDict):
    answer: str


# Upsert: a worker's profile is created on first write. Its answer is written here (the rating
# as a number, as the applicants list writes it), and given the caller's key, the key with it.
SET_SKILLS: Query[SetSkillsParams, ProfileAnswer] = Query("""
WITH changed AS (
    INSERT INTO workers (id, skills) VALUES (%(worker_id)s, %(skills)s)
    ON CONFLICT (id) DO UPDATE SET skills = excluded.skills, updated_at = now()
    RETURNING id, skills, rating
), answers AS (
    SELECT row_to_json(profile)::text AS answer
      FROM (SELECT id, skills, rating::float8 AS rating FROM changed) profile
), answered AS (  -- given the caller's key, the key with this answer (else nothing)
    INSERT INTO idempotency_keys (principal, key, fingerprint, status_code, body)
    SELECT %(principal)s::text, %(key)s::text, %(fingerprint)s::text, %(answer_status)s::integer,
           answer
      FROM answers
     WHERE %(key)s::text IS NOT NULL
)
SELECT * FROM answers
""")


def set_skills(
    conn: Connection, worker_id: str, update: WorkerProfileUpdate, key: KeyedRequest | None = None
) -> WorkerProfile:
    params: SetSkillsParams = {
        "worker_id": worker_id,
        "skills": update.skills,
        **answering(key, 200),
    }
    row = SET_SKILLS.one(conn, params)
    assert row is not None  # an upsert always returns its row
    return WorkerProfile.from_json(row["answer"])
