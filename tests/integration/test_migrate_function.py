"""The migrate custom resource: applies pending migrations at deploy and always answers
CloudFormation (SUCCESS, or FAILED with the reason), here against a real empty database."""

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest

from dispatch import db
from dispatch.config import settings
from dispatch_local import REPO_ROOT
from dispatch_local.events import LambdaContext
from dispatch_local.template import Function, handler_of
from tests.conftest import create_database, drop_database

MIGRATE = Function(
    "MigrateFunction", (REPO_ROOT / "functions" / "migrate").resolve(), "app.lambda_handler"
)


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
        p.stem for p in (REPO_ROOT / "migrations").glob("*.sql")
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
        handler_of(MIGRATE)(request("Create", url), LambdaContext(function_name="MigrateFunction"))
    finally:
        monkeypatch.undo()
        settings.cache_clear()
    assert answers[0]["Status"] == "FAILED"
    assert "OperationalError" in answers[0]["Reason"]


def test_delete_leaves_the_data_alone(cloudformation: tuple[str, list[dict[str, Any]]]) -> None:
    url, answers = cloudformation
    handler_of(MIGRATE)(request("Delete", url), LambdaContext(function_name="MigrateFunction"))
    assert answers[0]["Status"] == "SUCCESS"
