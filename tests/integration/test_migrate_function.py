"""The migrate custom resource: applies pending migrations at deploy and always answers
CloudFormation (SUCCESS, or FAILED with the reason), here against a real empty database."""

import json
import shutil
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from dispatch import db
from dispatch.config import settings
from dispatch.migrations import MIGRATOR_LOCK
from dispatch_local import REPO_ROOT
from dispatch_local.events import LambdaContext
from dispatch_local.template import Function, handler_of, load_module
from tests.conftest import create_database, drop_database
from tests.faults.proxy import Proxy, upstream_of

MIGRATE = Function(
    "MigrateFunction", (REPO_ROOT / "functions" / "migrate").resolve(), "app.lambda_handler"
)


def deploy_context() -> LambdaContext:
    """What the deployed function gets: 900 s, counted from now."""
    return LambdaContext(function_name="MigrateFunction", timeout_seconds=900)


@pytest.fixture
def cloudformation() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A stand-in for the presigned S3 URL CloudFormation waits on."""
    answers: list[dict[str, Any]] = []

    class Answer(BaseHTTPRequestHandler):
        def do_PUT(self) -> None:
            answers.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/response", answers
    server.shutdown()


def request(kind: str, url: str) -> dict[str, Any]:
    return {
        "RequestType": kind,
        "ResponseURL": url,
        "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/dispatch-dev/1",
        "RequestId": "req-1",
        "LogicalResourceId": "Migrations",
        "ResourceType": "Custom::Migrations",
        "ResourceProperties": {"Version": "3"},
    }


@pytest.fixture
def empty_database(admin_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    url = create_database(admin_url, migrate=False)
    monkeypatch.setenv("DATABASE_URL", url)
    settings.cache_clear()
    yield url
    monkeypatch.undo()
    settings.cache_clear()
    drop_database(admin_url, url)


def test_create_applies_everything_and_update_nothing_twice(
    empty_database: str, cloudformation: tuple[str, list[dict[str, Any]]]
) -> None:
    url, answers = cloudformation
    context = LambdaContext(function_name="MigrateFunction", timeout_seconds=300)
    handler_of(MIGRATE)(request("Create", url), context)
    handler_of(MIGRATE)(request("Update", url), context)
    assert [a["Status"] for a in answers] == ["SUCCESS", "SUCCESS"]
    assert answers[0]["Data"]["Applied"].split(",") == sorted(
        p.stem for p in (REPO_ROOT / "migrations").glob("[0-9][0-9][0-9][0-9]_*.sql")
    )
    assert answers[1]["Data"]["Applied"] == ""
    with db.connect(empty_database) as conn:
        assert conn.execute("SELECT to_regclass('jobs') IS NOT NULL AS ok").fetchone() == {
            "ok": True
        }


def test_a_failure_is_reported_not_hung(
    cloudformation: tuple[str, list[dict[str, Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://postgres@127.0.0.1:9/nowhere")
    settings.cache_clear()
    url, answers = cloudformation
    try:
        handler_of(MIGRATE)(request("Create", url), deploy_context())
    finally:
        monkeypatch.undo()
        settings.cache_clear()
    assert answers[0]["Status"] == "FAILED"
    assert "OperationalError" in answers[0]["Reason"]


def test_delete_leaves_the_data_alone(cloudformation: tuple[str, list[dict[str, Any]]]) -> None:
    url, answers = cloudformation
    handler_of(MIGRATE)(request("Delete", url), deploy_context())
    assert answers[0]["Status"] == "SUCCESS"


SLOW = "CREATE TABLE half_done (id int); SELECT pg_sleep(60);"


@pytest.fixture
def slow_migrations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The function's migrations plus one that takes a minute (an index build on a big table,
    say), in the folder the function ships them in."""
    folder = tmp_path / "migrations"
    shutil.copytree(REPO_ROOT / "migrations", folder)
    (folder / "9999_slow.sql").write_text(SLOW)
    monkeypatch.setattr(load_module(MIGRATE.code_uri, "app"), "MIGRATIONS", folder)
    return folder


def run_out_of_time(
    url: str, answers: list[dict[str, Any]], timeout_seconds: int
) -> tuple[dict[str, Any], float]:
    context = LambdaContext(function_name="MigrateFunction", timeout_seconds=timeout_seconds)
    started = time.monotonic()
    returned = handler_of(MIGRATE)(request("Create", url), context)
    assert answers, "CloudFormation never heard back"
    assert answers == [returned], "one answer, once"
    return answers[0], time.monotonic() - started


def test_a_slow_migration_is_cut_off_and_answered_failed_in_time(
    empty_database: str,
    cloudformation: tuple[str, list[dict[str, Any]]],
    slow_migrations: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The statement timeout is what the deploy has left (here 3 s of a 6 s function): the
    slow statement is cancelled by Postgres, the transaction rolls back, FAILED goes out."""
    monkeypatch.setattr(load_module(MIGRATE.code_uri, "app"), "WORK_MARGIN_SECONDS", 3.0)
    monkeypatch.setattr(load_module(MIGRATE.code_uri, "app"), "ANSWER_MARGIN_SECONDS", 1.0)
    url, answers = cloudformation
    answer, took = run_out_of_time(url, answers, timeout_seconds=6)
    assert answer["Status"] == "FAILED"
    assert "statement timeout" in answer["Reason"]
    assert took < 6
    assert nothing_applied(empty_database)


def test_the_deadline_timer_answers_failed_and_stops_the_work(
    empty_database: str,
    cloudformation: tuple[str, list[dict[str, Any]]],
    slow_migrations: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whatever keeps the work from ending on its own, the timer answers before the deadline
    and cancels the statement."""
    monkeypatch.setattr(load_module(MIGRATE.code_uri, "app"), "WORK_MARGIN_SECONDS", 0.0)
    monkeypatch.setattr(load_module(MIGRATE.code_uri, "app"), "ANSWER_MARGIN_SECONDS", 2.0)
    url, answers = cloudformation
    answer, took = run_out_of_time(url, answers, timeout_seconds=5)
    assert answer["Status"] == "FAILED"
    assert "deadline" in answer["Reason"]
    assert took < 5
    assert nothing_applied(empty_database)


def test_the_deadline_stops_the_work_through_a_proxy_that_drops_cancel_requests(
    empty_database: str,
    cloudformation: tuple[str, list[dict[str, Any]]],
    slow_migrations: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """RDS Proxy passes no cancel request on: the function must not count on one. Here the
    statement's own timeout is set past the deadline (whatever keeps the work going): the
    timer answers FAILED and hangs up, the function returns before its deadline, and the
    transaction that never committed leaves nothing behind."""
    info = conninfo_to_dict(empty_database)
    proxy = Proxy(upstream_of(str(info.get("host") or "/tmp"), int(info.get("port") or 5432)),
                  passes_cancels=False)  # fmt: skip
    monkeypatch.setenv(
        "DATABASE_URL", make_conninfo(empty_database, host="127.0.0.1", port=proxy.port)
    )
    settings.cache_clear()
    monkeypatch.setattr(load_module(MIGRATE.code_uri, "app"), "WORK_MARGIN_SECONDS", -30.0)
    monkeypatch.setattr(load_module(MIGRATE.code_uri, "app"), "ANSWER_MARGIN_SECONDS", 3.0)
    url, answers = cloudformation
    try:
        answer, took = run_out_of_time(url, answers, timeout_seconds=6)
    finally:
        proxy.close()
    assert answer["Status"] == "FAILED"
    assert "deadline" in answer["Reason"]
    assert took < 6
    assert nothing_applied(empty_database)


def nothing_applied(url: str) -> bool:
    """One transaction: the slow file's table and every earlier file's are all gone."""
    with db.connect(url) as conn:
        row = conn.execute(
            "SELECT to_regclass('half_done') IS NULL AND to_regclass('jobs') IS NULL AS none"
        ).fetchone()
        return row == {"none": True}


def test_a_busy_lock_is_waited_for_briefly_and_retried(
    empty_database: str,
    cloudformation: tuple[str, list[dict[str, Any]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Another migrator (or a long query) holds the lock for a while: each attempt gives up
    after the short lock timeout instead of queueing, and a later attempt gets through."""
    monkeypatch.setenv("DISPATCH_MIGRATION_LOCK_TIMEOUT_MS", "200")
    settings.cache_clear()
    url, answers = cloudformation
    with db.connect(empty_database) as holder:
        holder.execute("BEGIN")
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATOR_LOCK,))
        release = threading.Timer(1.5, lambda: holder.execute("ROLLBACK"))
        release.start()
        context = LambdaContext(function_name="MigrateFunction", timeout_seconds=120)
        handler_of(MIGRATE)(request("Create", url), context)
        release.join()
    assert answers[0]["Status"] == "SUCCESS", answers
    assert answers[0]["Data"]["Applied"]
