"""moto's hot paths made cheap, for the local stand-in; every answer moto gives is the same.

SQS: a queue's settings are read in constant time.

moto 5.2 builds `Queue.attributes` whole on every read, and the whole includes three counts
(visible, delayed, in flight), each a pass over every message in the queue. Its FIFO path reads
those attributes for one setting at a time: four times per send (content-based deduplication)
and three times per message received (the retention period). A FIFO queue 1,000 deep took
1.3 s per receive and delete, and the local outbox fell behind under sustained load
(docs/architecture.md, "Sustained load on the local stack").

Here the attributes leave the counts out, and `GetQueueAttributes` adds them back when they are
asked for. moto's own code does the rest, but for two walks of the queue it cannot avoid: the
messages ready to receive (it read the clock twice per message) and a delete (two passes, each
building every message's list of receipt handles): at 6,000 messages deep, a publisher's receive
took 180 ms and a delete of ten 116 ms. Here each walks the queue once, doing less per message.

EventBridge: a rule's input paths are parsed once. moto parses every JSONPath of a target's
input transformer on every event it delivers, and each parse builds jsonpath_ng's parser anew
(its yacc tables): 85% of a `PutEvents`, a median of 39 ms per published event under the soak,
and the publisher fell behind. The parsed paths are kept, keyed by their text.

Every request: moto's server finds the service a request is for under one lock that every
request takes, and there it lists moto's package directory (a `listdir` and a `stat` per
service, about 150) to learn which services exist; the list is read once. Attribute names are
turned into field names (a loop over the characters, twenty names per settings read) once each.
"""

import functools
from collections.abc import Callable
from typing import Any

import jsonpath_ng.ext
import moto.backends
import moto.sqs.models
from moto.core.utils import camelcase_to_underscores, unix_time_millis
from moto.sqs.exceptions import ReceiptHandleIsInvalid
from moto.sqs.models import Message, Queue, SQSBackend

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


def _ready(queue: Queue) -> list[Message]:
    """moto's `Queue.messages`: those visible and not delayed, by one reading of the clock."""
    now = unix_time_millis()
    return [m for m in queue._messages if now > m.visible_at and not now < m.delayed_until]


def _delete_message(queue: Queue, receipt_handle: str) -> None:
    """moto's `Queue.delete_message`, in one pass."""
    if receipt_handle in queue.deleted_messages:
        return  # deleting again is allowed
    kept: list[Message] = []
    for message in queue._messages:
        if (
            message.receipt_handle == receipt_handle
            or receipt_handle in message._old_receipt_handles
        ):
            queue.pending_messages.discard(message)
            queue.deleted_messages.update(message.all_receipt_handles)  # type: ignore[arg-type]
        else:
            kept.append(message)
    if len(kept) == len(queue._messages):
        raise ReceiptHandleIsInvalid()
    queue._messages = kept


PARSED_PATHS = 1024  # a deployment's rules have a few dozen


FIELD_NAMES = 512  # SQS's attribute names and actions, a few dozen


def _once(function: Callable[..., Any], size: int) -> Callable[..., Any]:
    return function if hasattr(function, "cache_info") else functools.lru_cache(size)(function)


def install() -> None:
    services = tuple(moto.backends.list_of_moto_modules())
    moto.backends.list_of_moto_modules = lambda: services
    field_name = _once(camelcase_to_underscores, FIELD_NAMES)
    moto.sqs.models.camelcase_to_underscores = field_name  # type: ignore[attr-defined]
    # moto.events.utils imports `parse` from jsonpath_ng.ext at each call, so it finds this one.
    jsonpath_ng.ext.parse = _once(jsonpath_ng.ext.parse, PARSED_PATHS)  # type: ignore[attr-defined]
    Queue.attributes = property(_settings)  # type: ignore[assignment,method-assign]
    Queue.messages = property(_ready)  # type: ignore[assignment,method-assign]
    Queue.delete_message = _delete_message  # type: ignore[method-assign,assignment]
    SQSBackend.get_queue_attributes = _get_queue_attributes  # type: ignore[method-assign,assignment]
