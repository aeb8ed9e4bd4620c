"""Worker profiles (skills, rating). Locations never live here: they go to Redis."""

from dispatch.db import Connection
from dispatch.workers.models import WorkerProfile, WorkerProfileUpdate

# Upsert: a worker's profile is created on first write.
SET_SKILLS = """
INSERT INTO workers (id, skills) VALUES (%(worker_id)s, %(skills)s)
ON CONFLICT (id) DO UPDATE SET skills = excluded.skills, updated_at = now()
RETURNING id, skills, rating
"""


def set_skills(conn: Connection, worker_id: str, update: WorkerProfileUpdate) -> WorkerProfile:
    row = conn.execute(SET_SKILLS, {"worker_id": worker_id, "skills": update.skills}).fetchone()
    assert row is not None  # an upsert always returns its row
    return WorkerProfile.model_validate(row)
