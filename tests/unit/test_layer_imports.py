"""The layer's imports go one way: no package or module of `dispatch` imports one that imports
it back, directly or through others (a back arrow in the layer's diagram).

Found from outside: `dispatch.events` imported the jobs and offers models to describe their
events, and they imported it back; each event's model now lives beside its concept.
"""

import ast
from collections import defaultdict
from pathlib import Path

from dispatch_local import REPO_ROOT

LAYER = REPO_ROOT / "shared" / "dispatch"


def part_of(module: str) -> str:
    """The node a module belongs to in the layer's diagram: `dispatch.jobs` for
    `dispatch.jobs.sql`, `dispatch.events` for itself."""
    return ".".join(module.split(".")[:2])


def module_name(path: Path) -> str:
    return ".".join(("dispatch", *path.relative_to(LAYER).with_suffix("").parts)).removesuffix(
        ".__init__"
    )


def imports_of(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "dispatch":
                found |= {f"dispatch.{alias.name}" for alias in node.names}
            elif node.module.startswith("dispatch."):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("dispatch.")}
    return found


def the_diagram() -> dict[str, set[str]]:
    arrows: dict[str, set[str]] = defaultdict(set)
    for path in LAYER.rglob("*.py"):
        source = part_of(module_name(path))
        for imported in imports_of(path):
            if part_of(imported) != source:
                arrows[source].add(part_of(imported))
    return arrows


def back_arrows(arrows: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Every arrow a -> b where b also reaches a."""

    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for after in arrows.get(todo.pop(), ()):
                if after not in seen:
                    seen.add(after)
                    todo.append(after)
        return seen

    return sorted((a, b) for a, targets in arrows.items() for b in targets if a in reach(b))


def test_the_layer_has_no_back_arrows() -> None:
    arrows = the_diagram()
    assert arrows["dispatch.jobs"], "the diagram must see the layer's imports"
    assert back_arrows(arrows) == []


def test_a_back_arrow_would_be_seen() -> None:
    arrows = the_diagram()
    arrows["dispatch.events"].add("dispatch.jobs")  # what events.py used to do
    assert ("dispatch.events", "dispatch.jobs") in back_arrows(arrows)
