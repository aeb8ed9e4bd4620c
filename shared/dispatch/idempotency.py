"""Idempotency keys in the same statement as the change they protect.

A keyed command's one statement records the caller's key with its answer itself (its
`answered` CTE, parameters from `answering`), so the change, its event, the key and the answer
commit together in one round trip, in autocommit (the statement is its own transaction).

- A finished duplicate finds the key taken: its statement fails on idempotency_keys_pkey and
  undoes itself, and the stored answer is replayed, or 422 if the request differs.
- A concurrent duplicate blocks on the key's unique index (or first on its change's row) until
  the first commits, then replays its stored answer; past `lock_timeout` it gets
  REQUEST_IN_PROGRESS.
- A business error (4xx) changed nothing: its answer is stored by a statement of its own and
  replayed like a success.
- Anything else (5xx) stores nothing, so a retry runs again.
"""

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypedDict

from psycopg import errors

from dispatch.db import Answering, Connection, Query
from dispatch.errors import Code, DispatchError, error_body
from dispatch.models import ID_FIELDS, Resource, to_json


class KeyParams(TypedDict):
    principal: str
    key: str


class TryKeyParams(KeyParams):
    fingerprint: str


class ClaimKeyParams(TryKeyParams):
    status: int
    body: str


# A business error's answer, stored after the command changed nothing (its statement
# matched nothing, or failed and undid itself). A key another request holds fails it on
# idempotency_keys_pkey, and that request's answer is replayed. A plain INSERT: ON CONFLICT
# DO NOTHING would insert speculatively, 48 more bytes of WAL for every lost race.
CLAIM_KEY_WITH_ANSWER: Query[ClaimKeyParams, None] = Query("""
INSERT INTO idempotency_keys (principal, key, fingerprint, status_code, body)
VALUES (%(principal)s, %(key)s, %(fingerprint)s, %(status)s, %(body)s)
""")

# Whether a twin still running holds the key, asked when a keyed statement waited too long on
# another row (the change's own row, which a twin takes before it records the key): the key
# tried without waiting (NO_LOCK_WAIT: 1 ms), in a transaction rolled back whatever it finds.
NO_LOCK_WAIT: Query[None, None] = Query("SET LOCAL lock_timeout = 1")
TRY_KEY: Query[TryKeyParams, None] = Query("""
INSERT INTO idempotency_keys (principal, key, fingerprint)
VALUES (%(principal)s, %(key)s, %(fingerprint)s)
""")


class StoredAnswer(TypedDict):
    """A key's row; its answer (status and body, written together) None while it has none."""

    fingerprint: str
    status_code: int | None
    body: str | None


STORED_ANSWER: Query[KeyParams, StoredAnswer] = Query("""
SELECT fingerprint, status_code, body FROM idempotency_keys
WHERE principal = %(principal)s AND key = %(key)s
""")


class ExpireKeysParams(TypedDict):
    hours: int
    limit: int


# Keys past their TTL leave a batch at a time (%(limit)s), the oldest first through
# idempotency_keys_created_at. The batch is chosen once (ARRAY(...)), so it is its size however
# many keys are due: one DELETE of every due key held the sweeper's pass for as long as a
# backlog took (jobs/sql.py REOPEN_EXPIRED says why not a joined sub-query). Rows by ctid: a
# key past its TTL is never written again, so its row stays where it was chosen.
EXPIRE_KEYS: Query[ExpireKeysParams, None] = Query("""
DELETE FROM idempotency_keys
 WHERE ctid = ANY(ARRAY(
       SELECT ctid FROM idempotency_keys
        WHERE created_at < now() - make_interval(hours => %(hours)s)
        ORDER BY created_at
        LIMIT %(limit)s
          FOR UPDATE SKIP LOCKED))
""")


@dataclass(frozen=True)
class KeyedRequest:
    principal: str
    key: str
    fingerprint: str
    request_id: str


# The key's parameters of a statement that records the caller's key with its answer, when
# there is no key: the statement records nothing (its `WHERE %(key)s::text IS NOT NULL`).
NO_KEY: Answering = {
    "principal": None,
    "key": None,
    "fingerprint": None,
    "answer_status": None,
}


def answering(key: KeyedRequest | None, status: int) -> Answering:
    """The key's parameters of a statement that records the caller's key with its answer (its
    `answered` CTE), or NO_KEY when there is no key: the statement then records nothing."""
    if key is None:
        return NO_KEY
    return {
        "principal": key.principal,
        "key": key.key,
        "fingerprint": key.fingerprint,
        "answer_status": status,
    }


@dataclass(frozen=True)
class Answer:
    status: int
    body: str
    replayed: bool = False
    made: Resource | None = None  # what the command made, on a fresh success only


def fingerprint(method: str, route: str, path_parameters: dict[str, str], body: Any) -> str:
    """Same request = same method, route, path parameters and JSON body (canonical form): an
    id in either case and a whole number as 1 or 1.0 are the same request, as validation reads
    them (dispatch.models.ApiId, WholeNumber)."""
    parameters = {name: _canonical(name, value) for name, value in path_parameters.items()}
    canonical = json.dumps(
        [method.upper(), route, sorted(parameters.items()), _canonical("", body)],
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def _canonical(name: str, value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _canonical(key, item) for key, item in value.items()}
    if isinstance(value, list):
        return [_canonical("", item) for item in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if name in ID_FIELDS and isinstance(value, str):
        return value.lower()
    return value


def execute(
    conn: Connection,
    request: KeyedRequest,
    command: Callable[[Connection, KeyedRequest], Resource],
    success_status: int,
) -> Answer:
    """Run `command` under the caller's key: its one statement records the key with its
    answer (one round trip, in autocommit: the statement is its own transaction). A key
    already taken makes the statement fail on idempotency_keys_pkey and undo itself: the
    stored answer is replayed (or 422). A twin still running holds the key (and perhaps the
    change's row, taken first): the statement waits for it, up to lock_timeout. A command that
    changed nothing raises its refusal, stored as any business error is."""
    try:
        result = command(conn, request)
    except DispatchError as error:
        if error.status >= 500:
            raise
        return _store_business_error(conn, request, error)
    except errors.UniqueViolation as error:
        if error.diag.constraint_name != "idempotency_keys_pkey":
            raise
        return _replay(conn, request)
    except errors.LockNotAvailable as error:
        if _waited_on_a_key(error) or _held_by_a_twin(conn, request):
            raise DispatchError(Code.REQUEST_IN_PROGRESS) from error
        raise
    return Answer(success_status, result.to_json(), made=result)


# Only the wait's own line of the error context says what was waited on ("while inserting
# index tuple (0,5) in relation "idempotency_keys_pkey"": a twin holds the key). The context
# also quotes the statement, and a keyed change's statement names idempotency_keys whatever
# row it waited on (the accept's function waits on the job's row under a lock held elsewhere).
_KEY_WAIT = re.compile(r'^while [^\n]* in relation "idempotency_keys(_pkey)?"$', re.MULTILINE)


def _waited_on_a_key(error: errors.LockNotAvailable) -> bool:
    return _KEY_WAIT.search(error.diag.context or "") is not None


def _held_by_a_twin(conn: Connection, request: KeyedRequest) -> bool:
    """Whether the key is held by a request still running (or was answered since: a retry
    replays it), after a keyed statement timed out waiting on a row other than the key's."""
    params: TryKeyParams = {
        "principal": request.principal,
        "key": request.key,
        "fingerprint": request.fingerprint,
    }
    try:
        with conn.transaction(force_rollback=True):
            NO_LOCK_WAIT.run(conn, None)
            TRY_KEY.run(conn, params)
    except (errors.LockNotAvailable, errors.UniqueViolation):
        return True
    return False


def _error_json(error: DispatchError, request: KeyedRequest) -> str:
    return to_json(error_body(error.code, request.request_id, error.details))


def _store_business_error(conn: Connection, request: KeyedRequest, error: DispatchError) -> Answer:
    body = _error_json(error, request)
    try:
        CLAIM_KEY_WITH_ANSWER.run(
            conn,
            {
                "principal": request.principal,
                "key": request.key,
                "fingerprint": request.fingerprint,
                "status": error.status,
                "body": body,
            },
        )
    except errors.UniqueViolation as taken:
        if taken.diag.constraint_name != "idempotency_keys_pkey":
            raise
        return _replay(conn, request)
    return Answer(error.status, body)


def _replay(conn: Connection, request: KeyedRequest) -> Answer:
    row = STORED_ANSWER.one(conn, {"principal": request.principal, "key": request.key})
    if row is None or row["status_code"] is None or row["body"] is None:
        # Expired between the failed insert and this read: ask for a retry.
        raise DispatchError(Code.REQUEST_IN_PROGRESS)
    if row["fingerprint"] != request.fingerprint:
        raise DispatchError(Code.IDEMPOTENCY_KEY_REUSED)
    return Answer(row["status_code"], row["body"], replayed=True)


def answered(conn: Connection, request: KeyedRequest) -> Answer | None:
    """The stored answer of exactly this request (same caller, key and fingerprint), if any."""
    row = STORED_ANSWER.one(conn, {"principal": request.principal, "key": request.key})
    if (
        row is None
        or row["status_code"] is None
        or row["body"] is None
        or row["fingerprint"] != request.fingerprint
    ):
        return None
    return Answer(row["status_code"], row["body"], replayed=True)


def expire(
    conn: Connection,
    older_than_hours: int,
    batch_size: int = 1000,
    keep_going: Callable[[], bool] = lambda: True,
) -> int:
    """Remove keys past their retention, batch after batch while `keep_going` (the sweeper
    calls this within its share of the pass); what is left goes on the next pass."""
    removed = 0
    while True:
        batch = EXPIRE_KEYS.run(conn, {"hours": older_than_hours, "limit": batch_size})
        removed += batch
        if batch < batch_size or not keep_going():
            return removed
