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


@given(st.lists(st.tuples(st.integers(min_value=0, max_value=5), st.booleans()), max_size=60))
def test_ten_at_most_one_version_per_job_in_order(events: list[tuple[int, bool]]) -> None:
    """A job's events of one version (its own, then its round's offers: `same` keeps the
    version) may share a call; never two versions of one job, and never out of order."""
    versions: dict[int, int] = {}
    messages = []
    for job, same in events:
        versions[job] = versions.get(job, 0) + (0 if same and job in versions else 1)
        messages.append(message(job, versions[job]))
    messages.sort(key=lambda m: m.order)
    sent: list[Message] = []
    for batch in batches(messages):
        assert 0 < len(batch) <= 10
        of_each = {(m.job_id, m.version) for m in batch}
        assert len({job for job, _ in of_each}) == len(of_each), "one version per job per call"
        sent += batch
    assert sorted(m.id for m in sent) == sorted(m.id for m in messages)  # each exactly once
    for job in set(versions):
        of_job = [m.order for m in sent if m.job_id == uuid.UUID(int=job)]
        assert of_job == sorted(of_job), "a job's events go out in the job's order"


def test_a_waves_offers_go_ten_to_a_call() -> None:
    offers = sorted((message(1, 1) for _ in range(25)), key=lambda m: m.order)
    assert [len(batch) for batch in batches(offers)] == [10, 10, 5]
