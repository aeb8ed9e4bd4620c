"""How the relay cuts its messages into SendMessageBatch calls."""

import uuid
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from dispatch.outbox.relay import Message, batches


def message(job: int, version: int) -> Message:
    return Message(
        id=uuid.uuid4(),
        job_id=uuid.UUID(int=job),
        version=version,
        offer=False,
        occurred_at=datetime.now(UTC),
        body="{}",
    )


@given(st.lists(st.integers(min_value=0, max_value=5), max_size=60))
def test_ten_at_most_one_per_job_in_version_order(jobs: list[int]) -> None:
    versions: dict[int, int] = {}
    messages = []
    for job in jobs:
        versions[job] = versions.get(job, 0) + 1
        messages.append(message(job, versions[job]))
    sent: list[Message] = []
    for batch in batches(messages):
        assert 0 < len(batch) <= 10
        assert len({m.job_id for m in batch}) == len(batch), "one event per job per call"
        sent += batch
    assert sorted(m.id for m in sent) == sorted(m.id for m in messages)  # each exactly once
    for job in set(jobs):
        of_job = [m.version for m in sent if m.job_id == uuid.UUID(int=job)]
        assert of_job == sorted(of_job), "a job's events go out in version order"
