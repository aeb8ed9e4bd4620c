"""The small world the sample events in events/ name, put in place by `dispatch invoke` before
it runs one of them, so that each answers as the README says on any database: a fresh clone's
embedded one or the running `make dev` stack's.

    job 01935f7e-0000-7000-8000-000000000001  open, posted by business-1, needs wash
    job 01935f7e-0000-7000-8000-000000000002  posted by business-1, assigned to worker-2
    job 01935f7e-0000-7000-8000-000000000003  open, business-1 chooses (no auto-pick), needs wash
    worker-1 (wash, wax) and worker-2 (wash)

Only what is missing is made, through the product's own statements (each job with its
`job.created` event, the assignment by the accept command): nothing that exists is changed,
so a sample run twice replays its first answer (each sample has its own Idempotency-Key) and
your own jobs and workers are never touched.
"""

from dataclasses import dataclass
from typing import Any
from uuid import UUID

OPEN_JOB = UUID("01935f7e-0000-7000-8000-000000000001")
HELD_JOB = UUID("01935f7e-0000-7000-8000-000000000002")
CHOICE_JOB = UUID("01935f7e-0000-7000-8000-000000000003")


@dataclass(frozen=True)
class SampleJob:
    business: str
    skills: tuple[str, ...]
    holder: str | None = None  # the worker who accepted it when it was made
    assignment: str = "first_come"  # or business_choice (without auto-pick or deadline)


JOBS = {
    OPEN_JOB: SampleJob("business-1", ("wash",)),
    HELD_JOB: SampleJob("business-1", ("wash",), holder="worker-2"),
    CHOICE_JOB: SampleJob("business-1", ("wash",), assignment="business_choice"),
}
WORKERS = {"worker-1": ("wash", "wax"), "worker-2": ("wash",)}

# A sample job, born as create_job makes one (open, version 1, its event) but with its own id;
# its window opens now and lasts thirty days. Nothing when it exists.
MAKE_JOB = """
WITH changed AS (
    INSERT INTO jobs (id, business_id, lat, lng, skills, window_start, window_end,
                      assignment, auto_pick)
    VALUES (%(job_id)s, %(business_id)s, 12.9716, 77.5946, %(skills)s,
            now(), now() + interval '30 days', %(assignment)s,
            CASE WHEN %(assignment)s = 'business_choice' THEN false END)
    ON CONFLICT (id) DO NOTHING
    RETURNING *, dispatch_job_json(jobs) AS document
), event AS (
    INSERT INTO job_events (job_id, type, version, actor, occurred_at, data)
    SELECT id, %(event_type)s, version, %(actor)s, updated_at, document::jsonb FROM changed
)
SELECT id FROM changed
"""


def named_by(event: Any) -> list[UUID]:
    """The sample jobs an event names (in its path, or in a queue message's body)."""
    text = str(event)
    return [job for job in JOBS if str(job) in text]


def prepare(event: Any) -> list[str]:
    """Make what the event's sample world lacks; returns what was made, in words."""
    jobs = named_by(event)
    if not jobs:
        return []
    from dispatch import db
    from dispatch.workers import profiles
    from dispatch.workers.models import WorkerProfileUpdate

    made = []
    with db.connect() as conn:
        for worker, skills in WORKERS.items():
            if conn.execute("SELECT 1 FROM workers WHERE id = %s", (worker,)).fetchone() is None:
                profiles.set_skills(conn, worker, WorkerProfileUpdate(skills=list(skills)))
                made.append(f"worker {worker} ({', '.join(skills)})")
        for job in jobs:
            spec = JOBS[job]
            made += _make_job(conn, job, spec)
    return made


def _make_job(conn: Any, job: UUID, spec: SampleJob) -> list[str]:
    """The job, and its assignment when it has a holder, in one transaction; nothing when it
    exists."""
    from dispatch.jobs import commands
    from dispatch.jobs.models import JobEventType

    made = []
    with conn.transaction():
        params = {
            "job_id": job,
            "business_id": spec.business,
            "skills": list(spec.skills),
            "assignment": spec.assignment,
            "event_type": JobEventType.CREATED,
            "actor": spec.business,
        }
        if conn.execute(MAKE_JOB, params).fetchone() is None:
            return []  # it exists: left as it is
        made.append(f"job {job} (open, posted by {spec.business}, {spec.assignment})")
        if spec.holder:
            commands.accept_job(conn, job, spec.holder, None)
            made.append(f"job {job} assigned to {spec.holder}")
    return made
