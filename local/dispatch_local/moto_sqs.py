"""moto's SQS with its queue settings read in constant time (imported by the local stand-in).

moto 5.2 builds `Queue.attributes` whole on every read, and the whole includes three counts
(visible, delayed, in flight), each a pass over every message in the queue. Its FIFO path reads
those attributes for one setting at a time: four times per send (content-based deduplication)
and three times per message received (the retention period). A FIFO queue 1,000 deep took
1.3 s per receive and delete, and the local outbox fell behind under sustained load
(docs/architecture.md, "Sustained load on the local stack").

Here the attributes leave the counts out, and `GetQueueAttributes` adds them back when they are
asked for: every answer moto gives is the same, and only its cost changes. moto's own code does
the rest.
"""

from collections.abc import Callable
from typing import Any

from moto.sqs.models import Queue, SQSBackend

COUNTS = {
    "ApproximateNumberOfMessages": "approximate_number_of_messages",
    "ApproximateNumberOfMessagesDelayed": "approximate_number_of_messages_delayed",
    "ApproximateNumberOfMessagesNotVisible": "approximate_number_of_messages_not_visible",
}

_moto_attributes: Callable[[Any], dict[str, Any]] = vars(Queue)["attributes"].fget
_moto_get_queue_attributes = SQSBackend.get_queue_attributes


class _Uncounted:
    """The queue as moto's `attributes` sees it, with the counts not counted."""

    def __init__(self, queue: Queue) -> None:
        self._queue = queue

    def __getattr__(self, name: str) -> Any:
        return 0 if name in COUNTS.values() else getattr(self._queue, name)


def _settings(queue: Queue) -> dict[str, Any]:
    result = _moto_attributes(_Uncounted(queue))
    for name in COUNTS:
        result.pop(name, None)
    return result


def _get_queue_attributes(
    backend: SQSBackend, queue_name: str, attribute_names: list[str]
) -> dict[str, Any]:
    answer = dict(_moto_get_queue_attributes(backend, queue_name, attribute_names))
    queue = backend.get_queue(queue_name)
    for name, field in COUNTS.items():
        if "All" in attribute_names or name in attribute_names:
            answer[name] = getattr(queue, field)
    return answer


def install() -> None:
    Queue.attributes = property(_settings)  # type: ignore[assignment,method-assign]
    SQSBackend.get_queue_attributes = _get_queue_attributes  # type: ignore[method-assign,assignment]
