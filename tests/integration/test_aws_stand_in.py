"""The AWS stand-in's hot paths (dispatch_local.moto_hot_paths): an SQS queue's settings are read
without counting its messages, and its counts are still right wherever they are asked for; an
EventBridge target's input paths are parsed once; the services moto serves are listed once."""

import os
import uuid
from typing import Any

import boto3
import jsonpath_ng.ext
import moto.backends
import moto.sqs.models
import pytest
from moto.core.utils import camelcase_to_underscores
from moto.sqs.models import Message, Queue, SQSBackend

from dispatch_local import moto_hot_paths


def test_a_fifo_queue_answers_its_counts_and_settings_as_moto_does(aws_stand_in: str) -> None:
    sqs = boto3.client("sqs")
    url = sqs.create_queue(
        QueueName=f"counts-{uuid.uuid4().hex[:12]}.fifo",
        Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"},
    )["QueueUrl"]
    for n in range(30):
        sqs.send_message(QueueUrl=url, MessageBody=f"m{n}", MessageGroupId=f"g{n}")
    sqs.send_message(QueueUrl=url, MessageBody="m0", MessageGroupId="g0")  # deduplicated
    taken = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    assert len(taken) == 10

    every = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert every["ApproximateNumberOfMessages"] == "20"
    assert every["ApproximateNumberOfMessagesNotVisible"] == "10"
    assert every["ApproximateNumberOfMessagesDelayed"] == "0"
    assert every["ContentBasedDeduplication"] == "true"
    assert every["FifoQueue"] == "true"
    named = sqs.get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "VisibilityTimeout"]
    )["Attributes"]
    assert named == {"ApproximateNumberOfMessages": "20", "VisibilityTimeout": "30"}

    for message in taken:
        sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    left = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
    assert left["Attributes"] == {"ApproximateNumberOfMessages": "20"}


def test_deletes_and_delays_are_answered_as_moto_does(aws_stand_in: str) -> None:
    """A message is deleted by any receipt handle it was given, twice without complaint; a
    handle no message had is refused; a delayed message is counted apart until its time."""
    sqs = boto3.client("sqs")
    url = sqs.create_queue(QueueName=f"deletes-{uuid.uuid4().hex[:12]}")["QueueUrl"]
    for n in range(3):
        sqs.send_message(QueueUrl=url, MessageBody=f"m{n}")
    sqs.send_message(QueueUrl=url, MessageBody="later", DelaySeconds=60)
    (first,) = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1)["Messages"]
    sqs.change_message_visibility(
        QueueUrl=url, ReceiptHandle=first["ReceiptHandle"], VisibilityTimeout=0
    )
    again = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=3)["Messages"]
    assert first["MessageId"] in {m["MessageId"] for m in again}

    sqs.delete_message(QueueUrl=url, ReceiptHandle=first["ReceiptHandle"])  # the older handle
    sqs.delete_message(QueueUrl=url, ReceiptHandle=first["ReceiptHandle"])  # again: allowed
    with pytest.raises(sqs.exceptions.ReceiptHandleIsInvalid):
        sqs.delete_message(QueueUrl=url, ReceiptHandle="no-message-had-this")
    counts = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert counts["ApproximateNumberOfMessagesNotVisible"] == "2"  # the other two received
    assert counts["ApproximateNumberOfMessagesDelayed"] == "1"
    assert counts["ApproximateNumberOfMessages"] == "0"


class Uncountable(Message):
    """A message that fails the test if anything looks at when it is visible (as counting it,
    moto's way or the override's, must)."""

    @property
    def visible_at(self) -> float:
        raise AssertionError("the queue's messages were counted")

    @visible_at.setter
    def visible_at(self, value: float) -> None:
        pass


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The override in this process, undone afterwards (the stand-in's server has its own)."""
    monkeypatch.setattr(Queue, "attributes", Queue.attributes)
    monkeypatch.setattr(SQSBackend, "get_queue_attributes", SQSBackend.get_queue_attributes)
    monkeypatch.setattr(Queue, "messages", Queue.messages)
    monkeypatch.setattr(Queue, "delete_message", Queue.delete_message)
    monkeypatch.setattr(jsonpath_ng.ext, "parse", jsonpath_ng.ext.parse)  # type: ignore[attr-defined]
    monkeypatch.setattr(moto.backends, "list_of_moto_modules", moto.backends.list_of_moto_modules)
    monkeypatch.setattr(moto.sqs.models, "camelcase_to_underscores", camelcase_to_underscores)
    moto_hot_paths.install()


def queue_holding_an_uncountable_message() -> tuple[SQSBackend, Queue]:
    backend = SQSBackend("us-east-1", "123456789012")
    queue = backend.create_queue("settings.fifo", FifoQueue="true")
    queue._messages.append(Uncountable(str(uuid.uuid4()), "body", {}))
    return backend, queue


def test_reading_a_setting_counts_no_message(installed: None) -> None:
    backend, queue = queue_holding_an_uncountable_message()
    settings: dict[str, Any] = queue.attributes
    assert settings["ContentBasedDeduplication"] == "false"
    assert backend.get_queue_attributes("settings.fifo", ["MessageRetentionPeriod"]) == {
        "MessageRetentionPeriod": 345600
    }
    with pytest.raises(AssertionError, match="counted"):  # counted when asked for, and only then
        backend.get_queue_attributes("settings.fifo", ["ApproximateNumberOfMessages"])


def test_an_input_path_is_parsed_once(installed: None) -> None:
    import jsonpath_ng.ext
    from moto.events.utils import EventTemplateParser

    event: Any = {"detail": {"job_id": "j-1"}, "ingestion-time": "now"}
    for _ in range(3):
        shaped = EventTemplateParser.parse('{"job": "<job>"}', {"job": "$.detail.job_id"}, event)
        assert shaped == {"job": "j-1"}
    parsed = jsonpath_ng.ext.parse.cache_info()  # type: ignore[attr-defined]
    assert parsed.misses >= 1
    assert parsed.hits >= 2


def test_the_services_are_listed_once(monkeypatch: pytest.MonkeyPatch, installed: None) -> None:
    """moto's server asks for the list under the lock every request takes."""
    listed = set(moto.backends.list_of_moto_modules())
    assert {"sqs", "s3", "events"} <= listed

    def no_disk(path: str) -> list[str]:
        raise AssertionError(f"listed {path} again")

    monkeypatch.setattr(os, "listdir", no_disk)
    assert set(moto.backends.list_of_moto_modules()) == listed
