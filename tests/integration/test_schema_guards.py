"""The database refuses illegal states by itself: plain SQL, no application code involved."""

from typing import Any

import psycopg
import pytest
from psycopg import errors

from dispatch.db import Connection
from tests.support import Api, one, walk_to, worker

JOB = """
INSERT INTO jobs (business_id, lat, lng, skills, window_start, window_end)
VALUES ('b-1', 12.9, 77.5, '{wash}', now() + interval '1 hour', now() + interval '2 hours')
RETURNING id
"""


@pytest.fixture
def job_id(conn: Connection) -> Any:
    row = conn.execute(JOB).fetchone()
    assert row is not None
    return row["id"]


def refused(conn: Connection, sql: str, params: dict[str, Any], constraint: str) -> None:
    with pytest.raises(psycopg.IntegrityError) as caught:
        conn.execute(sql, params)
    assert caught.value.diag.constraint_name == constraint


@pytest.mark.parametrize(
    ("assignment", "constraint"),
    [
        ("status = 'lost'", "jobs_status_valid"),
        ("version = 0", "jobs_version_positive"),
        ("status = 'assigned', lease_expires_at = now()", "jobs_assignee_iff_taken"),
        ("assignee_id = 'w-1'", "jobs_assignee_iff_taken"),
        ("status = 'in_progress'", "jobs_assignee_iff_taken"),
        ("status = 'assigned', assignee_id = 'w-1'", "jobs_lease_iff_assigned"),
        ("lease_expires_at = now()", "jobs_lease_iff_assigned"),
        (
            "status = 'in_progress', assignee_id = 'w-1', lease_expires_at = now()",
            "jobs_lease_iff_assigned",
        ),
        ("window_end = window_start", "jobs_window_ordered"),
        ("window_end = '10000-01-01 00:00:00+00'", "jobs_window_in_rfc3339"),
        (
            "window_start = '0001-01-01 00:00:00+00'::timestamptz - interval '1 s'",
            "jobs_window_in_rfc3339",
        ),
        ("lat = 90.5", "jobs_lat_range"),
        ("lng = -181", "jobs_lng_range"),
        ("skills = '{wash,NULL}'", "jobs_skills_no_nulls"),
    ],
)
def test_illegal_job_rows_are_refused(
    conn: Connection, job_id: Any, assignment: str, constraint: str
) -> None:
    refused(conn, f"UPDATE jobs SET {assignment} WHERE id = %(id)s", {"id": job_id}, constraint)


def test_one_live_job_per_worker(conn: Connection) -> None:
    first = conn.execute(JOB).fetchone()
    second = conn.execute(JOB).fetchone()
    assert first
    assert second
    take = """UPDATE jobs SET status = 'assigned', assignee_id = 'w-1', lease_expires_at = now()
              WHERE id = %(id)s"""
    conn.execute(take, {"id": first["id"]})
    refused(conn, take, {"id": second["id"]}, "jobs_one_live_job_per_worker")
    # In progress is live too.
    photo = conn.execute(
        "INSERT INTO photos (owner_id, s3_key, content_type) VALUES ('w-1', 'k', 'image/jpeg') "
        "RETURNING id"
    ).fetchone()
    assert photo
    conn.execute(
        "UPDATE jobs SET before_photo_id = %(photo)s WHERE id = %(id)s",
        {"photo": photo["id"], "id": first["id"]},
    )
    conn.execute(
        "UPDATE jobs SET status = 'in_progress', lease_expires_at = NULL WHERE id = %(id)s",
        {"id": first["id"]},
    )
    refused(conn, take, {"id": second["id"]}, "jobs_one_live_job_per_worker")
    # A finished job does not count as live.
    conn.execute(
        "UPDATE jobs SET status = 'cancelled', assignee_id = NULL WHERE id = %(id)s",
        {"id": first["id"]},
    )
    conn.execute(take, {"id": second["id"]})


def test_one_event_per_job_version(conn: Connection, job_id: Any) -> None:
    event = """INSERT INTO job_events (job_id, type, version, actor, data)
               SELECT id, %(type)s, 1, 'b-1', dispatch_job(j) FROM jobs j WHERE id = %(id)s"""
    conn.execute(event, {"id": job_id, "type": "job.created"})
    refused(conn, event, {"id": job_id, "type": "job.assigned"}, "job_events_one_per_change")


@pytest.mark.parametrize(
    ("column", "value", "constraint"),
    [
        ("type", "created", "job_events_type_valid"),
        ("version", 0, "job_events_version_positive"),
    ],
)
def test_malformed_events_are_refused(
    conn: Connection, job_id: Any, column: str, value: Any, constraint: str
) -> None:
    values = {"type": "job.created", "version": 1} | {column: value}
    refused(
        conn,
        """INSERT INTO job_events (job_id, type, version, actor)
           VALUES (%(id)s, %(type)s, %(version)s, 'b-1')""",
        {"id": job_id, **values},
        constraint,
    )


def test_event_of_unknown_job_is_refused(conn: Connection) -> None:
    with pytest.raises(errors.ForeignKeyViolation):
        conn.execute(
            """INSERT INTO job_events (job_id, type, version, actor)
               VALUES (gen_random_uuid(), 'job.created', 1, 'b-1')"""
        )


@pytest.mark.parametrize("key", ["", "has space", "tab\tkey", "é", "k" * 256])
def test_idempotency_key_format(conn: Connection, key: str) -> None:
    refused(
        conn,
        "INSERT INTO idempotency_keys (principal, key, fingerprint) VALUES ('p', %(key)s, 'f')",
        {"key": key},
        "idempotency_keys_key_format",
    )


def test_idempotency_key_is_unique_per_principal_only(conn: Connection) -> None:
    insert = """INSERT INTO idempotency_keys (principal, key, fingerprint)
                VALUES (%(principal)s, 'k-1', 'f')"""
    conn.execute(insert, {"principal": "alice"})
    conn.execute(insert, {"principal": "bob"})
    refused(conn, insert, {"principal": "alice"}, "idempotency_keys_pkey")


@pytest.mark.parametrize(
    ("ratings", "stars"),
    [(-1, 0), (2, 1), (2, 11)],  # a negative count; stars outside 1-5 each
)
def test_a_workers_stars_add_up(conn: Connection, ratings: int, stars: int) -> None:
    refused(
        conn,
        "INSERT INTO workers (id, ratings, stars) VALUES ('w-1', %(ratings)s, %(stars)s)",
        {"ratings": ratings, "stars": stars},
        "workers_ratings_counted",
    )


def test_a_workers_rating_is_only_ever_the_damped_average(conn: Connection) -> None:
    with pytest.raises(errors.GeneratedAlways):
        conn.execute("INSERT INTO workers (id, rating) VALUES ('w-1', 5)")
    conn.execute("INSERT INTO workers (id) VALUES ('w-2'), ('w-3')")
    conn.execute("UPDATE workers SET ratings = 1, stars = 5 WHERE id = 'w-2'")
    conn.execute("UPDATE workers SET ratings = 45, stars = 225 WHERE id = 'w-3'")
    rows = conn.execute("SELECT id, rating::float FROM workers ORDER BY id").fetchall()
    # As if each began with five ratings of 4 stars: one 5 barely moves it, 45 nearly all.
    assert rows == [{"id": "w-2", "rating": 4.17}, {"id": "w-3", "rating": 4.9}]


def complete(conn: Connection, job_id: Any) -> None:
    """The job walked to completed in plain SQL, step by step, as the rules allow."""
    photos = [
        row["id"]
        for row in conn.execute(
            """INSERT INTO photos (owner_id, s3_key, content_type)
               SELECT 'w-1', 'k-' || gen_random_uuid(), 'image/jpeg' FROM generate_series(1, 2)
               RETURNING id"""
        )
    ]
    for step in (
        "status = 'assigned', assignee_id = 'w-1', lease_expires_at = now()",
        "before_photo_id = %(before)s",
        "status = 'in_progress', lease_expires_at = NULL",
        "after_photo_id = %(after)s",
        "status = 'completed'",
    ):
        conn.execute(
            f"UPDATE jobs SET {step} WHERE id = %(id)s",
            {"id": job_id, "before": photos[0], "after": photos[1]},
        )


@pytest.mark.parametrize(
    ("completed", "assignment", "constraint"),
    [
        (True, "rating = 6", "jobs_rating_stars"),
        (True, "rating = 0", "jobs_rating_stars"),
        (False, "rating = 4", "jobs_rated_only_when_completed"),
        (False, "min_rating = 5.5", "jobs_min_rating_range"),
        (False, "min_rating = 0.5", "jobs_min_rating_range"),
        (False, "status = 'expired'", "jobs_expired_only_after_the_window"),
    ],
)
def test_ratings_and_expiry_are_guarded(
    conn: Connection, job_id: Any, completed: bool, assignment: str, constraint: str
) -> None:
    if completed:
        complete(conn, job_id)
    refused(conn, f"UPDATE jobs SET {assignment} WHERE id = %(id)s", {"id": job_id}, constraint)


def test_a_job_is_rated_once_and_expires_only_after_its_window(
    conn: Connection, job_id: Any
) -> None:
    complete(conn, job_id)
    conn.execute("UPDATE jobs SET rating = 4 WHERE id = %(id)s", {"id": job_id})
    rate_again = "UPDATE jobs SET rating = 5 WHERE id = %(id)s"
    refused(conn, rate_again, {"id": job_id}, "jobs_rated_once")
    ended = conn.execute(
        """INSERT INTO jobs (business_id, lat, lng, window_start, window_end)
           VALUES ('b-1', 1, 1, now() - interval '2 hours', now() - interval '1 hour')
           RETURNING id"""
    ).fetchone()
    assert ended is not None
    conn.execute("UPDATE jobs SET status = 'expired' WHERE id = %(id)s", ended)


def test_a_decline_is_recorded_once_for_a_real_job(conn: Connection, job_id: Any) -> None:
    decline = "INSERT INTO job_declines (job_id, worker_id) VALUES (%(id)s, 'w-1')"
    conn.execute(decline, {"id": job_id})
    refused(conn, decline, {"id": job_id}, "job_declines_pkey")
    with pytest.raises(errors.ForeignKeyViolation):
        conn.execute(
            "INSERT INTO job_declines (job_id, worker_id) VALUES (gen_random_uuid(), 'w-1')"
        )


def test_a_lost_race_is_recorded_once_only_for_an_offer_of_a_round_another_won(
    conn: Connection, job_id: Any
) -> None:
    """job_races_lost (migration 0057): no offer, no lost race (its foreign key on
    job_offers_once_per_worker); an offer whose round nobody won, or that they won themselves,
    no lost race (job_races_lost_only_when_taken); once per worker and job."""
    offer = """INSERT INTO job_offers (job_id, worker_id, job_version, wave, distance_m)
               VALUES (%(id)s, %(worker)s, 1, 1, 500)"""
    for worker_id in ("w-1", "w-2"):
        conn.execute(offer, {"id": job_id, "worker": worker_id})
    lost = "INSERT INTO job_races_lost (job_id, worker_id) VALUES (%(id)s, %(worker)s)"
    refused(conn, lost, {"id": job_id, "worker": "w-3"}, "job_races_lost_held_an_offer")
    refused(conn, lost, {"id": job_id, "worker": "w-1"}, "job_races_lost_only_when_taken")
    event = """INSERT INTO job_events (job_id, type, version, actor, data)
               SELECT id, %(type)s, version, %(actor)s, dispatch_job(j) FROM jobs j
                WHERE id = %(id)s"""
    conn.execute(event, {"id": job_id, "type": "job.created", "actor": "b-1"})
    conn.execute(  # w-2 takes the job: the round w-1 was offered is won by another
        "UPDATE jobs SET status = 'assigned', assignee_id = 'w-2', version = 2,"
        " lease_expires_at = now() + interval '5 minutes' WHERE id = %(id)s",
        {"id": job_id},
    )
    conn.execute(event, {"id": job_id, "type": "job.assigned", "actor": "w-2"})
    refused(conn, lost, {"id": job_id, "worker": "w-2"}, "job_races_lost_only_when_taken")
    refused(conn, lost, {"id": job_id, "worker": "w-3"}, "job_races_lost_held_an_offer")
    conn.execute(lost, {"id": job_id, "worker": "w-1"})
    refused(conn, lost, {"id": job_id, "worker": "w-1"}, "job_races_lost_pkey")


def test_job_ids_are_uuid_version_7_in_creation_order(conn: Connection) -> None:
    ids = [one(conn, JOB)["id"] for _ in range(5)]
    assert all(i.version == 7 for i in ids)
    assert ids == sorted(ids)


def test_a_lease_never_outlives_the_window(conn: Connection, job_id: Any) -> None:
    beyond = """UPDATE jobs SET status = 'assigned', assignee_id = 'w-1',
                                lease_expires_at = window_end + interval '1 second'
                 WHERE id = %(id)s"""
    refused(conn, beyond, {"id": job_id}, "jobs_lease_within_window")
    conn.execute(beyond.replace("+ interval '1 second'", ""), {"id": job_id})  # up to its end


def test_nobody_takes_renews_or_starts_a_job_once_its_window_ended(conn: Connection) -> None:
    ended = conn.execute(
        """INSERT INTO jobs (business_id, lat, lng, window_start, window_end)
           VALUES ('b-1', 1, 1, now() - interval '2 hours', now() - interval '1 hour')
           RETURNING id"""
    ).fetchone()
    assert ended is not None
    take = """UPDATE jobs SET status = 'assigned', assignee_id = 'w-1',
                              lease_expires_at = window_end WHERE id = %(id)s"""
    refused(conn, take, ended, "jobs_held_only_within_the_window")

    # Held within the window, with the before photo; then its hours go by (the clock).
    held = conn.execute(JOB).fetchone()
    assert held is not None
    photo = conn.execute(
        "INSERT INTO photos (owner_id, s3_key, content_type) VALUES ('w-1', 'k', 'image/jpeg') "
        "RETURNING id"
    ).fetchone()
    assert photo is not None
    conn.execute(take, held)
    conn.execute(
        "UPDATE jobs SET before_photo_id = %(photo)s WHERE id = %(id)s",
        {"id": held["id"], "photo": photo["id"]},
    )
    conn.execute(
        """UPDATE jobs SET window_start = now() - interval '2 hours',
                           window_end = now() - interval '1 second',
                           lease_expires_at = now() - interval '10 minutes'
            WHERE id = %(id)s""",
        held,
    )
    renew = "UPDATE jobs SET lease_expires_at = window_end WHERE id = %(id)s"
    refused(conn, renew, held, "jobs_held_only_within_the_window")
    start = "UPDATE jobs SET status = 'in_progress', lease_expires_at = NULL WHERE id = %(id)s"
    refused(conn, start, held, "jobs_held_only_within_the_window")
    # What stays possible: the sweeper's expiry.
    conn.execute(
        "UPDATE jobs SET status = 'expired', assignee_id = NULL, before_photo_id = NULL,"
        " lease_expires_at = NULL WHERE id = %(id)s",
        held,
    )


MARKET = """
INSERT INTO offer_market (area, door, half_distance_m, answers)
VALUES (%(area)s, %(door)s, %(half)s, %(answers)s)
"""


@pytest.mark.parametrize(
    ("row", "constraint"),
    [
        ({"door": 1.2}, "offer_market_door_is_a_chance"),
        ({"door": 0.0}, "offer_market_door_is_a_chance"),
        ({"half": 0.0}, "offer_market_half_distance_positive"),
        ({"answers": -1}, "offer_market_answers_nonnegative"),
        ({"area": -2}, "offer_market_area_valid"),
        ({"area": 64800}, "offer_market_area_valid"),
    ],
)
def test_the_markets_curve_is_one_row_an_area_of_a_chance_and_a_distance(
    conn: Connection, row: dict[str, Any], constraint: str
) -> None:
    """An area's curve (migration 0058; -1 the deployment's), written past the application."""
    fine = {"area": 37077, "door": 0.8, "half": 2500.0, "answers": 300}
    refused(conn, MARKET, fine | row, constraint)
    conn.execute(MARKET, fine)
    refused(conn, MARKET, fine, "offer_market_pkey")  # one area, one row
    conn.execute(MARKET, fine | {"area": -1})  # the deployment's beside it
    conn.execute(MARKET, fine | {"area": 64799})  # the last area there is


def test_an_area_is_a_cell_of_a_degree_by_a_degree_and_every_position_has_one(
    conn: Connection,
) -> None:
    """dispatch_market_area (0058): a position's area is its row (latitude) and column
    (longitude) of whole degrees; the poles and the antimeridian fall inside the valid areas."""
    rows = conn.execute("""
        SELECT dispatch_market_area(lat, lng) AS area
          FROM (VALUES (12.9716, 77.5946), (12.01, 77.99), (13.0827, 80.2707), (-90, -180),
                       (90, 180), (90, 179.99), (-89.5, 180), (0, 0), (-0.01, -0.01))
               AS p(lat, lng)
    """).fetchall()
    assert [r["area"] for r in rows] == [
        102 * 360 + 257, 102 * 360 + 257, 103 * 360 + 260, 0, 179 * 360, 64799, 0,
        90 * 360 + 180, 89 * 360 + 179,
    ]  # fmt: skip


BAND = """
INSERT INTO offer_market_bands (area, band, offers, accepts, as_of)
VALUES (%(area)s, %(band)s, %(offers)s, %(accepts)s, now())
"""
ANSWERS = """
INSERT INTO worker_answers (worker_id, offers, accepts, declines, silences, releases,
                            leases_run_out, expected, answer_s_sum, answer_s_count, as_of)
VALUES ('w', %(offers)s, %(accepts)s, %(declines)s, %(silences)s, 0, %(leases_run_out)s,
        %(expected)s, 0, 0, now())
"""
FOLDED = "UPDATE offer_answers_folded SET last_offer_id = %(id)s, last_offer_at = %(at)s"


@pytest.mark.parametrize(
    ("statement", "fine", "row", "constraint"),
    [
        (BAND, {"area": 7, "band": 1, "offers": 2.0, "accepts": 1.0}, {"band": -1},
         "offer_market_bands_band_nonnegative"),
        (BAND, {"area": 7, "band": 1, "offers": 2.0, "accepts": 1.0}, {"area": -2},
         "offer_market_bands_area_valid"),
        (BAND, {"area": 7, "band": 1, "offers": 2.0, "accepts": 1.0}, {"area": 64800},
         "offer_market_bands_area_valid"),
        (BAND, {"area": 7, "band": 1, "offers": 2.0, "accepts": 1.0}, {"accepts": -0.5},
         "offer_market_bands_counts_nonnegative"),
        (BAND, {"area": 7, "band": 1, "offers": 2.0, "accepts": 1.0}, {"accepts": 2.5},
         "offer_market_bands_accepts_within_offers"),
        (ANSWERS, {"offers": 3.0, "accepts": 1.0, "declines": 1.0, "silences": 1.0,
                   "leases_run_out": 0.0, "expected": 1.5}, {"leases_run_out": -1.0},
         "worker_answers_counts_nonnegative"),
        (ANSWERS, {"offers": 3.0, "accepts": 1.0, "declines": 1.0, "silences": 1.0,
                   "leases_run_out": 0.0, "expected": 1.5}, {"silences": 1.5},
         "worker_answers_kinds_within_offers"),
        (FOLDED, {"id": None, "at": None}, {"at": "2026-01-01T00:00:00Z"},
         "offer_answers_folded_whole"),
    ],
)  # fmt: skip
def test_the_folded_answers_are_counts_that_add_up(
    conn: Connection, statement: str, fine: dict[str, Any], row: dict[str, Any], constraint: str
) -> None:
    """The folded tallies (migration 0048), written past the application: a negative count,
    more kinds than answers, or a cursor without its time is refused."""
    refused(conn, statement, fine | row, constraint)
    conn.execute(statement, fine)
    refused(conn, "INSERT INTO offer_answers_folded (id) VALUES (false)", {},
            "offer_answers_folded_one_row")  # fmt: skip


def test_the_markets_answers_are_one_row_an_area_and_band(conn: Connection) -> None:
    """offer_market_bands' key (migration 0058): a band once an area, in every area."""
    fine = {"area": 7, "band": 1, "offers": 2.0, "accepts": 1.0}
    conn.execute(BAND, fine)
    conn.execute(BAND, fine | {"area": 8})
    conn.execute(BAND, fine | {"area": -1})  # the deployment's, folded before areas
    refused(conn, BAND, fine, "offer_market_bands_pkey")


def test_a_workers_record_follows_its_completed_jobs_whoever_rewrites_them(
    api: Api, conn: Connection
) -> None:
    """worker_records (migration 0044) moves with the row, even when the owner rewrites a
    completed job in place or gives it to someone else (as a bulk load or a correction does)."""
    job = walk_to(api, "completed", holder=worker("kept"))

    def records() -> dict[str, int]:
        rows = conn.execute("SELECT worker_id, completed FROM worker_records").fetchall()
        return {r["worker_id"]: r["completed"] for r in rows if r["completed"]}

    assert records() == {"worker-kept": 1}
    conn.execute("UPDATE jobs SET status = 'completed' WHERE id = %s", (job["id"],))
    assert records() == {"worker-kept": 1}
    conn.execute("UPDATE jobs SET assignee_id = 'worker-other' WHERE id = %s", (job["id"],))
    assert records() == {"worker-other": 1}
