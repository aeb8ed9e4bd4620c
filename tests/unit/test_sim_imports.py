"""No import cycle in the simulator: no module of `sim` imports one that imports it back,
directly or through others, counting every import (at the top, inside a function, or for the
type checker alone).

Found by issue 36: `sim.city` and `sim.run` imported each other (a six-file cycle with
`choosing`, `push`, `scenario` and `world`). What both sides read (the workers and jobs the
city tracks, a job's fate and row, the percentiles) now lives in `sim.state`; `choosing`
describes the city it calls back (a Protocol) instead of importing it, and the businesses'
`Choosing` settings live with the rest of the scenario.
"""

import ast
from pathlib import Path

from dispatch_local import REPO_ROOT

SIM = REPO_ROOT / "sim"


def sim_imports(path: Path, modules: set[str]) -> set[str]:
    """The modules of `sim` that the file imports, wherever the import statement is."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "sim":  # from sim import run
                found |= {f"sim.{a.name}" for a in node.names if f"sim.{a.name}" in modules}
                found |= {"sim"} - {f"sim.{a.name}" for a in node.names}
            elif node.module.startswith("sim."):
                found.add(node.module)
        elif isinstance(node, ast.ImportFrom) and node.level:  # from . import run
            raise AssertionError(f"{path.name}: relative import; the graph wants absolute ones")
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name == "sim" or a.name.startswith("sim.")}
    return found & modules


def the_graph() -> dict[str, set[str]]:
    paths = {("sim." + p.stem).removesuffix(".__init__"): p for p in sorted(SIM.glob("*.py"))}
    modules = set(paths)
    return {name: sim_imports(path, modules) - {name} for name, path in paths.items()}


def a_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (its modules in import order, the first again at the end), or None."""
    done: set[str] = set()
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return None
        path.append(node)
        for after in sorted(graph.get(node, ())):
            if (cycle := visit(after)) is not None:
                return cycle
        path.pop()
        done.add(node)
        return None

    for start in sorted(graph):
        if (cycle := visit(start)) is not None:
            return cycle
    return None


def test_sim_has_no_import_cycle() -> None:
    graph = the_graph()
    assert "sim.state" in graph["sim.city"], "the graph must see the simulator's imports"
    assert "sim.city" in graph["sim.run"], "imports inside functions count"
    assert a_cycle(graph) is None, " -> ".join(a_cycle(graph) or [])


def test_a_cycle_would_be_seen() -> None:
    graph = the_graph()
    graph["sim.city"].add("sim.run")  # what city.py used to do (run imports City)
    cycle = a_cycle(graph)
    assert cycle is not None and {"sim.city", "sim.run"} <= set(cycle)
