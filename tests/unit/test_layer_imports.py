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


# -- the parts around the layer -------------------------------------------------------------
#
# Issue 36: the rule covers the simulator and the local stack too. Each part of the project may
# import only the parts below it: the layer (`dispatch`) none, being deployed alone under every
# function; a function (`functions/*/app.py`) the layer alone, all its package holds; the local
# stack (`dispatch_local`) the layer, which it runs as Lambda would (functions it loads by path,
# from template.yaml, never by import); the simulator (`sim`) the layer and the local stack,
# through which it drives the product. One arrow goes up: `dispatch simulate`, the CLI's command
# (`dispatch_local.cli`), runs the simulator (`sim.cli`); the simulator never imports the CLI.

PARTS = {
    "dispatch": LAYER,
    "functions": REPO_ROOT / "functions",
    "dispatch_local": REPO_ROOT / "local" / "dispatch_local",
    "sim": REPO_ROOT / "sim",
}
OURS = {"dispatch", "dispatch_local", "sim", "bench", "functions", "tests"}
MAY_IMPORT: dict[str, set[str]] = {
    "dispatch": set(),
    "functions": {"dispatch"},
    "dispatch_local": {"dispatch"},
    "sim": {"dispatch", "dispatch_local"},
}
ENTRY_POINTS = {("dispatch_local.cli", "sim.cli")}  # (importer, imported): the one arrow up
NEVER = {"sim": "dispatch_local.cli"}  # the arrow up, back down


def project_imports(path: Path) -> set[str]:
    """The project's modules a file imports (top level, in a function, or for the checker)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return {name for name in found if name.split(".")[0] in OURS}


def every_import() -> dict[str, dict[str, set[str]]]:
    """Part -> module -> the project's modules it imports."""
    found: dict[str, dict[str, set[str]]] = {}
    for part, root in PARTS.items():
        modules = found.setdefault(part, {})
        for path in sorted(root.rglob("*.py")):
            name = ".".join((part, *path.relative_to(root).with_suffix("").parts))
            modules[name.removesuffix(".__init__")] = project_imports(path)
    return found


def wrong_imports(found: dict[str, dict[str, set[str]]]) -> list[tuple[str, str]]:
    wrong = []
    for part, modules in found.items():
        for module, imported in modules.items():
            for name in sorted(imported):
                other = name.split(".")[0]
                allowed = other == part or other in MAY_IMPORT[part]
                allowed = allowed or (module, name) in ENTRY_POINTS
                never = part in NEVER and (name + ".").startswith(NEVER[part] + ".")
                if never or not allowed:
                    wrong.append((module, name))
    return wrong


def test_every_part_imports_only_the_parts_below_it() -> None:
    found = every_import()
    assert "dispatch_local" in found["sim"]["sim.city"] or any(
        n.startswith("dispatch_local.") for n in found["sim"]["sim.city"]
    ), "the rule must see the simulator's imports"
    assert any(n.startswith("dispatch.") for n in found["functions"]["functions.accept_job.app"])
    assert wrong_imports(found) == []


def test_a_wrong_import_would_be_seen() -> None:
    found = every_import()
    found["dispatch"]["dispatch.db"].add("dispatch_local.services")
    found["sim"]["sim.run"].add("dispatch_local.cli")
    found["functions"]["functions.accept_job.app"].add("dispatch_local.events")
    found["dispatch_local"]["dispatch_local.stack"].add("sim.run")
    assert wrong_imports(found) == [
        ("dispatch.db", "dispatch_local.services"),
        ("functions.accept_job.app", "dispatch_local.events"),
        ("dispatch_local.stack", "sim.run"),
        ("sim.run", "dispatch_local.cli"),
    ]
