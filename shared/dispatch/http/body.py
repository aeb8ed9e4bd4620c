"""A request body read as JSON within limits no hostile body can break.

Python's own reader fails in two ways that are not a bad request to it: JSON nested about a
thousand levels deep exhausts the recursion limit (RecursionError), and an integer of more than
4,300 digits is more than `int()` converts (ValueError, by design: CVE-2020-10735). Both were
500s. Here:

- Nesting deeper than `MAX_DEPTH` is refused before parsing, naming the body's top-level member
  it happens in (the deepest body the API takes nests three levels).
- An integer too long to convert is read as the float it stands for (infinite), which every
  numeric field refuses as it refuses any number out of its range, naming itself.
- A key given twice in one object is refused, naming the key: the reader would keep the last
  silently, and a client that meant the first would never learn its value was dropped.
"""

import json
from typing import Any

from dispatch.errors import Code, DispatchError

MAX_DEPTH = 32


def parse(text: str) -> Any:
    """The body's JSON value; DispatchError (400, naming where) when it is nested too deep,
    json.JSONDecodeError when it is not JSON at all."""
    member = nested_beyond(text, MAX_DEPTH)
    if member is not None:
        problem = f"is nested more than {MAX_DEPTH} levels deep"
        raise DispatchError(Code.VALIDATION_FAILED, [{"field": member, "problem": problem}])
    return json.loads(text, parse_int=_integer, object_pairs_hook=_object)


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            problem = "is given more than once in one object"
            raise DispatchError(Code.VALIDATION_FAILED, [{"field": key, "problem": problem}])
        seen.add(key)
    return dict(pairs)


def _integer(literal: str) -> int | float:
    try:
        return int(literal)
    except ValueError:  # more digits than int() converts: no field takes such a number
        return float(literal)


def nested_beyond(text: str, limit: int) -> str | None:
    """Where `text` opens arrays or objects more than `limit` deep, if it does: the top-level
    member it happens in, or "body" (the body itself, or no member yet). One pass, no
    recursion; brackets inside strings are text. Well-formedness is the parser's concern."""
    if text.count("[") + text.count("{") <= limit:
        return None  # cannot nest that deep: every body the API takes ends here
    depth, member = 0, "body"
    in_string = escaped = False
    start, last_string = 0, (0, 0)
    for at, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
                last_string = (start, at + 1)
            continue
        if char == '"':
            in_string, start = True, at
        elif char in "[{":
            depth += 1
            if depth > limit:
                return member
        elif char in "]}":
            depth -= 1
        elif char == ":" and depth == 1:
            member = _key(text[slice(*last_string)], member)
    return None


def _key(literal: str, otherwise: str) -> str:
    try:
        key = json.loads(literal)
    except ValueError:
        return otherwise
    return key if isinstance(key, str) else otherwise
