"""Random event sequences through the handlers, the database compared with a model each step."""

from dataclasses import dataclass, replace

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    invariant,
    rule,
    run_state_machine_as_test,
)

from dispatch import db
from dispatch.jobs.lifecycle import MACHINE, PHOTO_SLOT_STATUS, Actor
from dispatch.jobs.models import JobStatus, Photo, TransitionEvent
from dispatch.sweeper import sweep
from tests.conftest import empty_the_tables
from tests.support import BUSINESS, Api, Who, job_body, upload_photo, worker

WORKERS = [worker(n) for n in range(3)]

# A worker's record the slow way, from every job and event (what choice/sql.py read before
# migration 0044 kept it as it changes).
RECOUNT = """
SELECT worker_id, sum(completed)::int AS completed, sum(released)::int AS released,
       sum(vanished)::int AS vanished
  FROM (SELECT assignee_id AS worker_id, 1 AS completed, 0 AS released, 0 AS vanished
          FROM jobs WHERE status = 'completed'
        UNION ALL
        SELECT actor, 0, 1, 0 FROM job_events WHERE type = 'job.released'
        UNION ALL
        SELECT before.data ->> 'assignee_id', 0, 0, 1
          FROM job_events r
          JOIN job_events before ON before.job_id = r.job_id AND before.version = r.version - 1
         WHERE r.type = 'job.reopened' AND before.data ->> 'assignee_id' IS NOT NULL) facts
 GROUP BY worker_id
"""
OWNERS: list[Who] = [BUSINESS, ("business-2", "business")]


@dataclass(frozen=True)
class Modelled:
    owner: str
    status: JobStatus = JobStatus.OPEN
    version: int = 1
    assignee: str | None = None
    before: bool = False
    after: bool = False


class JobLives(RuleBasedStateMachine):
    jobs = Bundle("jobs")

    def __init__(self, api: Api, conn: db.Connection) -> None:
        super().__init__()
        self.api, self.conn = api, conn
        empty_the_tables(conn)
        for who in WORKERS:
            assert api.call("PUT", "/workers/me", who, {"skills": ["wash"]}).status == 200
        self.model: dict[str, Modelled] = {}

    def holds_live_job(self, worker_id: str) -> bool:
        live = {JobStatus.ASSIGNED, JobStatus.IN_PROGRESS}
        return any(j.assignee == worker_id and j.status in live for j in self.model.values())

    @rule(target=jobs, owner=st.sampled_from(OWNERS))
    def create(self, owner: Who) -> str:
        reply = self.api.call("POST", "/jobs", owner, job_body(["wash"]))
        assert reply.status == 201
        self.model[reply.body["id"]] = Modelled(owner=owner[0])
        job_id: str = reply.body["id"]
        return job_id

    @rule(job_id=jobs, who=st.sampled_from(WORKERS), with_version=st.booleans())
    def accept(self, job_id: str, who: Who, with_version: bool) -> None:
        job = self.model[job_id]
        body = {"version": job.version} if with_version else {}
        reply = self.api.call("POST", f"/jobs/{job_id}/accept", who, body)
        wins = job.status is JobStatus.OPEN and not self.holds_live_job(who[0])
        assert (reply.status == 200) == wins, (job, who, reply.body)
        if wins:
            self.model[job_id] = replace(
                job, status=JobStatus.ASSIGNED, version=job.version + 1, assignee=who[0]
            )

    @rule(
        job_id=jobs,
        event=st.sampled_from(list(TransitionEvent)),
        who=st.sampled_from(WORKERS + OWNERS),
        stale=st.booleans(),
    )
    def transition(self, job_id: str, event: TransitionEvent, who: Who, stale: bool) -> None:
        job = self.model[job_id]
        move = MACHINE[event]
        version = job.version - 1 if stale and job.version > 1 else job.version
        reply = self.api.call(
            "POST", f"/jobs/{job_id}/transitions", who, {"event": event.value, "version": version}
        )
        actor = job.assignee if move.actor is Actor.ASSIGNEE else job.owner
        wins = (
            who[1] == move.actor.role.value
            and who[0] == actor
            and version == job.version
            and job.status in move.sources
            and (move.needs is not Photo.BEFORE or job.before)
            and (move.needs is not Photo.AFTER or job.after)
        )
        assert (reply.status == 200) == wins, (job, event, who, version, reply.body)
        if wins:
            back = move.target in (JobStatus.OPEN, JobStatus.CANCELLED)
            self.model[job_id] = replace(
                job,
                status=move.target,
                version=job.version + 1,
                assignee=None if back else job.assignee,
                before=False if back else job.before,
            )

    @rule(job_id=jobs, who=st.sampled_from(WORKERS), slot=st.sampled_from(list(Photo)))
    def attach(self, job_id: str, who: Who, slot: Photo) -> None:
        job = self.model[job_id]
        photo_id = upload_photo(self.api, who)  # uploaded for real: attach looks at it
        reply = self.api.call(
            "PUT", f"/jobs/{job_id}/photos/{slot.value}", who, {"photo_id": photo_id}
        )
        wins = job.assignee == who[0] and job.status is PHOTO_SLOT_STATUS[slot]
        assert (reply.status == 200) == wins, (job, who, slot, reply.body)
        if wins:
            self.model[job_id] = replace(
                job,
                version=job.version + 1,
                before=job.before or slot is Photo.BEFORE,
                after=job.after or slot is Photo.AFTER,
            )

    @rule(job_id=jobs)
    def lease_runs_out_and_the_sweeper_passes(self, job_id: str) -> None:
        self.conn.execute(
            "UPDATE jobs SET lease_expires_at = now() - interval '1 second' "
            "WHERE id = %s AND status = 'assigned'",
            (job_id,),
        )
        report = sweep(self.conn)
        job = self.model[job_id]
        assert report.reopened == (1 if job.status is JobStatus.ASSIGNED else 0)
        if job.status is JobStatus.ASSIGNED:
            self.model[job_id] = replace(
                job, status=JobStatus.OPEN, version=job.version + 1, assignee=None, before=False
            )

    @invariant()
    def database_matches_the_model(self) -> None:
        rows = self.conn.execute(
            "SELECT id::text AS id, status, version, assignee_id, "
            "before_photo_id IS NOT NULL AS before, after_photo_id IS NOT NULL AS after FROM jobs"
        ).fetchall()
        actual = {
            r["id"]: (r["status"], r["version"], r["assignee_id"], r["before"], r["after"])
            for r in rows
        }
        expected = {
            i: (j.status.value, j.version, j.assignee, j.before, j.after)
            for i, j in self.model.items()
        }
        assert actual == expected

    @invariant()
    def worker_records_match_a_recount(self) -> None:
        """The records the triggers keep (migration 0044) equal a recount from every job and
        event, whatever sequence of accepts, releases, completions and sweeps came before."""
        kept = {
            r["worker_id"]: (r["completed"], r["released"], r["vanished"])
            for r in self.conn.execute("SELECT * FROM worker_records").fetchall()
            if (r["completed"], r["released"], r["vanished"]) != (0, 0, 0)
        }
        recount = {
            r["worker_id"]: (r["completed"], r["released"], r["vanished"])
            for r in self.conn.execute(RECOUNT).fetchall()
        }
        assert kept == recount

    @invariant()
    def one_event_per_version(self) -> None:
        rows = self.conn.execute(
            "SELECT job_id::text AS id, array_agg(version ORDER BY version) AS versions "
            "FROM job_events GROUP BY job_id"
        ).fetchall()
        for row in rows:
            assert row["versions"] == list(range(1, self.model[row["id"]].version + 1))


def test_random_lives_match_the_model(api: Api, conn: db.Connection) -> None:
    run_state_machine_as_test(
        # Hypothesis takes any factory of a machine (its docstring says so), but annotates the
        # parameter as the machine's class.
        lambda: JobLives(api, conn),  # type: ignore[arg-type]
        settings=settings(
            max_examples=30,
            stateful_step_count=25,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
