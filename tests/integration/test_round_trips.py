"""What the accept sends to Postgres, counted from the wire (libpq's protocol trace)."""

from dispatch_local import REPO_ROOT
from dispatch_local.wire import traced
from tests.support import Api, make_job, make_worker, worker


def test_accept_happy_path_is_one_round_trip(api: Api) -> None:
    job = make_job(api)
    make_worker(api, worker(1))
    api.call("GET", "/health", None, key=None)  # the environment's connection exists already

    replies = []
    wire = traced(
        lambda: replies.append(api.call("POST", f"/jobs/{job['id']}/accept", worker(1), {}))
    )
    assert replies[0].status == 200
    assert wire.round_trips == 1, wire
    # One statement, its own transaction: the call of the function that runs the conditional
    # UPDATE, its event, and the key with its answer (a key already taken would fail it whole).
    (statement,) = wire.statements
    assert statement.strip().startswith("SELECT * FROM dispatch_accept_job("), statement
    assert "p_key =>" in statement, statement
    schema = (REPO_ROOT / "migrations" / "schema.sql").read_text()
    function = schema.split("CREATE FUNCTION public.dispatch_accept_job(")[1].split("$$;")[0]
    for part in ("UPDATE jobs", "dispatch_holding", "INSERT INTO job_events"):
        assert part in function, part
    assert "INSERT INTO idempotency_keys" in function
    # The outbox relay runs only after the commit: claim the new event, (send), mark it sent
    # (each statement over both tables of the outbox, job_events and offer_events).
    assert [s.split()[0].upper() for s in wire.after_commit] == ["WITH", "WITH"]
    assert "relay_claimed_until" in wire.after_commit[0]
    assert "relayed_at = CASE" in wire.after_commit[1]


def test_losing_costs_more_but_stays_small(api: Api) -> None:
    job = make_job(api)
    for n in (1, 2):
        make_worker(api, worker(n))
    api.call("POST", f"/jobs/{job['id']}/accept", worker(1), {})
    replies = []
    wire = traced(
        lambda: replies.append(api.call("POST", f"/jobs/{job['id']}/accept", worker(2), {}))
    )
    assert replies[0].code == "JOB_TAKEN"
    # The same first round trip, one read to name the cause, one to record the lost race (a yes:
    # written when the loser held an offer of the round; here none, so it writes nothing), one
    # to store the 409.
    assert wire.round_trips == 4, wire
    assert [s.split()[0].upper() for s in wire.statements[1:3]] == ["SELECT", "INSERT"]
    assert "INSERT INTO job_races_lost" in wire.statements[2], wire.statements
